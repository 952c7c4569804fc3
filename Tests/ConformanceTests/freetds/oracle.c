/*
 * oracle.c — the FreeTDS side of SQLClient's conformance oracle.
 *
 * Not part of the SwiftPM build: ConformanceTests compiles it at test time with
 *     cc -o oracle oracle.c -lsybdb
 * (and skips, with a message, when freetds-dev is absent).
 *
 * Usage: oracle [--bench] HOST:PORT TDSVER BATCHFILE
 *   TDSVER    7.1, 7.2, 7.3 or 7.4 (DBSETLVERSION)
 *   BATCHFILE SQL batches separated by lines holding exactly "-- @@batch"; a batch whose text is
 *             "-- @@rpc NAME" is sent as an RPC call of procedure NAME without parameters
 *             (dbrpcinit/dbrpcsend) instead
 *
 * Connects with db-lib, runs each batch and prints, one item per line, using FreeTDS's own
 * decoding (dbdata, dbdatlen, dbanydatecrack, dbconvert) and the canonical text of values in
 * SQLClient's DESIGN.md ("Canonical text of a value"):
 *   BATCH <n>
 *   RESULT                       a result set with columns follows
 *   COL <i> <dbcoltype> <name as JSON>
 *   ROW
 *   VAL <i> NULL | VAL <i> <canonical text as JSON>
 *   VAL <i> UNSUPPORTED <type>   db-lib has no conversion of this type to text (sql_variant)
 *   NOTE <i> dbconvert <JSON>    FreeTDS's own text conversion of the value (money), for the record
 *   COUNT <DBCOUNT>              after each result (-1 = no count)
 *   RETSTATUS <n>
 *   RET <i> <name as JSON> NULL | RET <i> <name> <canonical text as JSON>   output parameters (dbnumrets, dbretdata)
 *   MSG <number> <severity> <text as JSON>
 *   ERR <dberr> <severity> <text as JSON>
 *   FAIL <what>
 *   RECONNECT                    FreeTDS had marked the connection dead; a new one was opened
 *   END
 * Every text is UTF-8 (the client charset is set to UTF-8), written as a JSON string.
 *
 * With --bench nothing is printed per value: every value is converted to a native C value, as
 * the old Objective-C SQLClient did (integers, floats and money read natively, decimal through
 * dbconvert to text, dates through dbanydatecrack, strings and binaries copied into fresh heap
 * buffers), and one line per batch is printed:
 *   BENCH <rows> <values> <bytes of data> <seconds>
 */
#define MSDBLIB 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <inttypes.h>
#include <time.h>
#include <sybfront.h>
#include <sybdb.h>

static void json(const char *s, size_t n)
{
	putchar('"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char) s[i];
		switch (c) {
		case '"': fputs("\\\"", stdout); break;
		case '\\': fputs("\\\\", stdout); break;
		case '\n': fputs("\\n", stdout); break;
		case '\r': fputs("\\r", stdout); break;
		case '\t': fputs("\\t", stdout); break;
		default:
			if (c < 0x20 || c == 0x7F)
				printf("\\u%04X", c);
			else
				putchar(c);
		}
	}
	putchar('"');
}

static int msg_handler(DBPROCESS *dbproc, DBINT msgno, int msgstate, int severity, char *msgtext,
		       char *srvname, char *procname, int line)
{
	(void) dbproc; (void) msgstate; (void) srvname; (void) procname; (void) line;
	printf("MSG %d %d ", (int) msgno, severity);
	json(msgtext ? msgtext : "", msgtext ? strlen(msgtext) : 0);
	putchar('\n');
	return 0;
}

static int err_handler(DBPROCESS *dbproc, int severity, int dberr, int oserr, char *dberrstr, char *oserrstr)
{
	(void) dbproc; (void) oserr; (void) oserrstr;
	printf("ERR %d %d ", dberr, severity);
	json(dberrstr ? dberrstr : "", dberrstr ? strlen(dberrstr) : 0);
	putchar('\n');
	return INT_CANCEL;
}

static void print_hex(const BYTE *p, DBINT n)
{
	static const char digits[] = "0123456789ABCDEF";
	putchar('"'); putchar('0'); putchar('x');
	for (DBINT i = 0; i < n; i++) {
		putchar(digits[p[i] >> 4]);
		putchar(digits[p[i] & 15]);
	}
	putchar('"');
}

/* Fraction digits: the first `scale` digits of nanoseconds. */
static void fraction(char *out, size_t size, long ns, int scale)
{
	if (scale <= 0) { out[0] = 0; return; }
	char digits[16];
	snprintf(digits, sizeof digits, "%09ld", ns);
	if (scale > 9) scale = 9;
	digits[scale] = 0;
	snprintf(out, size, ".%s", digits);
}

static void print_text(const char *s)
{
	json(s, strlen(s));
}

/* Prints one non-NULL value of db-lib type `type` (data as dbdata gives it). */
static void print_value(DBPROCESS *dbproc, int col, int type, const BYTE *data, DBINT len)
{
	char buf[512];
	switch (type) {
	case SYBINT1: printf("\"%u\"", (unsigned) *(const DBTINYINT *) data); return;
	case SYBINT2: printf("\"%d\"", (int) *(const DBSMALLINT *) data); return;
	case SYBINT4: printf("\"%d\"", (int) *(const DBINT *) data); return;
	case SYBINT8: printf("\"%" PRId64 "\"", (int64_t) *(const DBBIGINT *) data); return;
	case SYBBIT: printf("\"%d\"", *(const DBBIT *) data ? 1 : 0); return;
	case SYBREAL: printf("\"%.9g\"", (double) *(const DBREAL *) data); return;
	case SYBFLT8: printf("\"%.17g\"", *(const DBFLT8 *) data); return;
	case SYBMONEY: {
		/* FreeTDS's DBMONEY: high and low 32 bits of the amount in 1/10000 units. */
		const DBMONEY *m = (const DBMONEY *) data;
		int64_t units = (int64_t) (((uint64_t) (uint32_t) m->mnyhigh << 32) | (uint32_t) m->mnylow);
		uint64_t mag = units < 0 ? (uint64_t) 0 - (uint64_t) units : (uint64_t) units;
		printf("\"%s%" PRIu64 ".%04u\"", units < 0 ? "-" : "", mag / 10000, (unsigned) (mag % 10000));
		return;
	}
	case SYBMONEY4: {
		DBINT units = ((const DBMONEY4 *) data)->mny4;
		int64_t u = units;
		uint64_t mag = u < 0 ? (uint64_t) (-u) : (uint64_t) u;
		printf("\"%s%" PRIu64 ".%04u\"", u < 0 ? "-" : "", mag / 10000, (unsigned) (mag % 10000));
		return;
	}
	case SYBDECIMAL: case SYBNUMERIC: {
		DBINT n = dbconvert(dbproc, type, data, len, SYBCHAR, (BYTE *) buf, sizeof buf - 1);
		if (n < 0) { print_text("<dbconvert failed>"); return; }
		buf[n] = 0;
		print_text(buf);
		return;
	}
	case SYBDATETIME: case SYBDATETIME4: {
		DBDATEREC2 d;
		if (dbanydatecrack(dbproc, &d, type, data) != SUCCEED) { print_text("<dbanydatecrack failed>"); return; }
		if (type == SYBDATETIME4)
			snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:00", d.year, d.month, d.day, d.hour, d.minute);
		else
			snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d.%03d", d.year, d.month, d.day, d.hour,
				 d.minute, d.second, (int) ((d.nanosecond + 500000) / 1000000));
		print_text(buf);
		return;
	}
	case SYBMSDATE: case SYBMSTIME: case SYBMSDATETIME2: case SYBMSDATETIMEOFFSET: {
		const DBDATETIMEALL *all = (const DBDATETIMEALL *) data;
		DBDATEREC2 d;
		char frac[24], off[16] = "";
		if (dbanydatecrack(dbproc, &d, type, data) != SUCCEED) { print_text("<dbanydatecrack failed>"); return; }
		fraction(frac, sizeof frac, d.nanosecond, all->time_prec);
		if (type == SYBMSDATETIMEOFFSET) {
			int o = all->offset, a = o < 0 ? -o : o;
			snprintf(off, sizeof off, " %c%02d:%02d", o < 0 ? '-' : '+', a / 60, a % 60);
		}
		if (type == SYBMSDATE)
			snprintf(buf, sizeof buf, "%04d-%02d-%02d", d.year, d.month, d.day);
		else if (type == SYBMSTIME)
			snprintf(buf, sizeof buf, "%02d:%02d:%02d%s", d.hour, d.minute, d.second, frac);
		else
			snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d%s%s", d.year, d.month, d.day, d.hour,
				 d.minute, d.second, frac, off);
		print_text(buf);
		return;
	}
	case SYBBINARY: case SYBVARBINARY: case SYBIMAGE: case 173 /* BIGBINARY */: case 165 /* BIGVARBINARY */:
		print_hex(data, len);
		return;
	case 36 /* SYBUNIQUE */: {
		DBINT n = dbconvert(dbproc, type, data, len, SYBCHAR, (BYTE *) buf, sizeof buf - 1);
		if (n < 0) { print_text("<dbconvert failed>"); return; }
		buf[n] = 0;
		for (char *p = buf; *p; p++) if (*p >= 'a' && *p <= 'f') *p -= 32;
		print_text(buf);
		return;
	}
	case SYBCHAR: case SYBVARCHAR: case SYBTEXT: case SYBNTEXT: case SYBNVARCHAR:
	case 231 /* XSYBNVARCHAR */: case 239 /* XSYBNCHAR */: case 167 /* XSYBVARCHAR */: case 175 /* XSYBCHAR */:
	case 241 /* SYBMSXML */:
		json((const char *) data, (size_t) len);
		return;
	default: {
		/* Anything else: FreeTDS's conversion to text, when db-lib offers one. */
		if (!dbwillconvert(type, SYBCHAR)) {
			printf("UNSUPPORTED %d", type);
			return;
		}
		char *big = malloc((size_t) len * 4 + 256);
		if (!big) { print_text("<oom>"); return; }
		DBINT n = dbconvert(dbproc, type, data, len, SYBCHAR, (BYTE *) big, len * 4 + 255);
		if (n < 0) { free(big); printf("UNSUPPORTED %d", type); return; }
		json(big, (size_t) n);
		free(big);
		return;
	}
	}
	(void) col;
}

/* --bench: the native conversion of one value; returns bytes of data seen. */
static volatile int64_t sink;

static long consume_value(DBPROCESS *dbproc, int type, const BYTE *data, DBINT len)
{
	char buf[128];
	switch (type) {
	case SYBINT1: sink += *(const DBTINYINT *) data; return 1;
	case SYBINT2: sink += *(const DBSMALLINT *) data; return 2;
	case SYBINT4: sink += *(const DBINT *) data; return 4;
	case SYBINT8: sink += *(const DBBIGINT *) data; return 8;
	case SYBBIT: sink += *(const DBBIT *) data; return 1;
	case SYBREAL: sink += (int64_t) *(const DBREAL *) data; return 4;
	case SYBFLT8: sink += (int64_t) *(const DBFLT8 *) data; return 8;
	case SYBMONEY: {
		const DBMONEY *m = (const DBMONEY *) data;
		sink += (int64_t) (((uint64_t) (uint32_t) m->mnyhigh << 32) | (uint32_t) m->mnylow);
		return 8;
	}
	case SYBMONEY4: sink += ((const DBMONEY4 *) data)->mny4; return 4;
	case SYBDECIMAL: case SYBNUMERIC: {
		DBINT n = dbconvert(dbproc, type, data, len, SYBCHAR, (BYTE *) buf, sizeof buf - 1);
		sink += n;
		return len;
	}
	case SYBDATETIME: case SYBDATETIME4: case SYBMSDATE: case SYBMSTIME: case SYBMSDATETIME2: case SYBMSDATETIMEOFFSET: {
		DBDATEREC2 d;
		if (dbanydatecrack(dbproc, &d, type, data) == SUCCEED)
			sink += d.year + d.nanosecond;
		return len;
	}
	default: {
		char *copy = malloc((size_t) len + 1);
		if (copy) {
			memcpy(copy, data, (size_t) len);
			copy[len] = 0;
			sink += copy[0];
			free(copy);
		}
		return len;
	}
	}
}

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t) n + 1);
	if (!s) { fclose(f); return NULL; }
	if (fread(s, 1, (size_t) n, f) != (size_t) n) { fclose(f); free(s); return NULL; }
	s[n] = 0;
	fclose(f);
	return s;
}

int main(int argc, char **argv)
{
	int bench = argc > 1 && !strcmp(argv[1], "--bench");
	if (bench) { argv++; argc--; }
	if (argc != 4) {
		fprintf(stderr, "usage: %s [--bench] HOST:PORT TDSVER BATCHFILE\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	BYTE version = DBVERSION_74;
	if (!strcmp(argv[2], "7.1")) version = DBVERSION_71;
	else if (!strcmp(argv[2], "7.2")) version = DBVERSION_72;
	else if (!strcmp(argv[2], "7.3")) version = DBVERSION_73;
	char *batches = read_file(argv[3]);
	if (!batches) { printf("FAIL read %s\n", argv[3]); return 1; }

	if (dbinit() == FAIL) { printf("FAIL dbinit\n"); return 1; }
	dberrhandle(err_handler);
	dbmsghandle(msg_handler);
	dbsetlogintime(10);
	dbsettime(30);
	LOGINREC *login = dblogin();
	DBSETLUSER(login, "oracle");
	DBSETLPWD(login, "oracle");
	DBSETLAPP(login, "sqlclient-oracle");
	DBSETLCHARSET(login, "UTF-8");
	dbsetlversion(login, version);
	DBPROCESS *dbproc = dbopen(login, argv[1]);
	if (!dbproc) { printf("FAIL dbopen\n"); fflush(stdout); return 1; }

	int batch = 0;
	char *cursor = batches;
	const char *sep = "\n-- @@batch\n";
	while (cursor && *cursor) {
		char *next = strstr(cursor, sep);
		if (next) { *next = 0; next += strlen(sep); }
		if (!strncmp(cursor, "-- @@batch\n", 11)) cursor += 11;
		if (*cursor == 0) { cursor = next; continue; }
		printf("BATCH %d\n", batch++);
		double started = now_seconds();
		long bench_rows = 0, bench_values = 0, bench_bytes = 0;
		if (dbdead(dbproc)) {
			/* FreeTDS gave up on the connection in an earlier batch: start a new one so
			   one failure does not hide every later result. */
			dbclose(dbproc);
			dbproc = dbopen(login, argv[1]);
			printf("RECONNECT\n");
			if (!dbproc) { printf("FAIL dbopen\n"); break; }
		}
		RETCODE sent;
		if (!strncmp(cursor, "-- @@rpc ", 9)) {
			char name[256];
			snprintf(name, sizeof name, "%s", cursor + 9);
			name[strcspn(name, "\n")] = 0;
			sent = dbrpcinit(dbproc, name, 0) == FAIL || dbrpcsend(dbproc) == FAIL || dbsqlok(dbproc) == FAIL ? FAIL : SUCCEED;
		} else {
			sent = dbcmd(dbproc, cursor) == FAIL || dbsqlexec(dbproc) == FAIL ? FAIL : SUCCEED;
		}
		if (sent == FAIL) {
			printf("FAIL dbsqlexec\n");
		} else {
			RETCODE rc;
			while ((rc = dbresults(dbproc)) != NO_MORE_RESULTS) {
				if (rc == FAIL) { printf("FAIL dbresults\n"); break; }
				int ncols = dbnumcols(dbproc);
				if (ncols > 0) {
					printf("RESULT\n");
					for (int c = 1; c <= ncols; c++) {
						const char *name = dbcolname(dbproc, c);
						printf("COL %d %d ", c, dbcoltype(dbproc, c));
						json(name ? name : "", name ? strlen(name) : 0);
						putchar('\n');
					}
					RETCODE row;
					while ((row = dbnextrow(dbproc)) != NO_MORE_ROWS) {
						if (row == FAIL) { printf("FAIL dbnextrow\n"); break; }
						if (bench) {
							bench_rows++;
							for (int c = 1; c <= ncols; c++) {
								BYTE *data = dbdata(dbproc, c);
								DBINT len = dbdatlen(dbproc, c);
								bench_values++;
								if (data != NULL)
									bench_bytes += consume_value(dbproc, dbcoltype(dbproc, c), data, len);
							}
							continue;
						}
						printf("ROW\n");
						for (int c = 1; c <= ncols; c++) {
							BYTE *data = dbdata(dbproc, c);
							DBINT len = dbdatlen(dbproc, c);
							printf("VAL %d ", c);
							int type = dbcoltype(dbproc, c);
							if (data == NULL && len == 0)
								fputs("NULL", stdout);
							else
								print_value(dbproc, c, type, data, len);
							putchar('\n');
							if (data != NULL && (type == SYBMONEY || type == SYBMONEY4)) {
								/* What FreeTDS's own money-to-text converter makes of it. */
								char text[64];
								DBINT n = dbconvert(dbproc, type, data, len, SYBCHAR, (BYTE *) text, sizeof text - 1);
								if (n >= 0) {
									text[n] = 0;
									printf("NOTE %d dbconvert ", c);
									json(text, (size_t) n);
									putchar('\n');
								}
							}
						}
					}
				}
				printf("COUNT %d\n", (int) DBCOUNT(dbproc));
				if (dbhasretstat(dbproc))
					printf("RETSTATUS %d\n", (int) dbretstatus(dbproc));
				int nrets = dbnumrets(dbproc);
				for (int r = 1; r <= nrets; r++) {
					BYTE *data = dbretdata(dbproc, r);
					DBINT len = dbretlen(dbproc, r);
					char *name = dbretname(dbproc, r);
					printf("RET %d ", r);
					json(name ? name : "", name ? strlen(name) : 0);
					putchar(' ');
					if (data == NULL && len <= 0)
						fputs("NULL", stdout);
					else
						print_value(dbproc, r, dbrettype(dbproc, r), data, len);
					putchar('\n');
				}
			}
		}
		if (bench)
			printf("BENCH %ld %ld %ld %.6f\n", bench_rows, bench_values, bench_bytes, now_seconds() - started);
		cursor = next;
	}
	printf("END\n");
	fflush(stdout);
	if (dbproc)
		dbclose(dbproc);
	dbexit();
	free(batches);
	return 0;
}
