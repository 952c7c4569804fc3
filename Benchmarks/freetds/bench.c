/*
 * bench.c — the FreeTDS side of sqlclient-bench.
 *
 * Not part of the SwiftPM build: `sqlclient-bench` compiles it at run time with
 *     cc -O2 -o freetds-bench bench.c -lsybdb
 * (and reports FreeTDS as unavailable when freetds-dev is absent).
 *
 * Usage: freetds-bench HOST:PORT SQL PACKETSIZE
 *   PACKETSIZE  the packet size asked for at login (DBSETLPACKET), 0 = FreeTDS's default
 *
 * Logs in with db-lib (TDS 7.4, client charset UTF-8), runs SQL as one batch and fetches every
 * row the way the old Objective-C SQLClient did: each column is bound once per result set with
 * dbbind() to a native C type chosen by its db-lib type (INTBIND, BIGINTBIND, FLT8BIND,
 * MONEYBIND, decimal as text, NTBSTRINGBIND for character types, DATETIMEBIND /
 * DATETIME2BIND then dbanydatecrack() for dates, BINARYBIND), with dbnullbind() for NULLs, and
 * dbnextrow() fills the bound buffers. Values too large to bind (varbinary(max)) are copied out
 * of dbdata() into a fresh buffer, as NSData did.
 *
 * Every value is folded into a checksum with the same digest as sqlclient-bench's Swift side
 * (so both clients are seen to decode the same values), and one JSON line is printed:
 *   {"rows":N,"seconds":S,"checksum":"HEX","allocations":A,"maxrss_kb":K,"packet_size":P}
 * `seconds` runs from dbsqlexec() to the end of the last result; `allocations` counts heap
 * allocations over the same span when the bench's malloc counter is preloaded (-1 otherwise).
 */
#define MSDBLIB 1
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <inttypes.h>
#include <time.h>
#include <dlfcn.h>
#include <sys/resource.h>
#include "../peer-clock.h"
#include <sybfront.h>
#include <sybdb.h>

#define NULL_DIGEST 0x9E3779B97F4A7C15ULL
#define MIX 1099511628211ULL

enum kind { K_INT1, K_INT2, K_INT4, K_INT8, K_BIT, K_FLT8, K_REAL, K_MONEY, K_MONEY4, K_DECIMAL,
	    K_DATETIME, K_DATE, K_DATETIME2, K_GUID, K_STRING, K_BINARY, K_BIG };

struct column {
	int type;
	enum kind kind;
	DBINT size;
	BYTE *buffer;
	DBINT status;
};

static unsigned long long (*malloc_count)(void);

static int msg_handler(DBPROCESS *dbproc, DBINT msgno, int msgstate, int severity, char *msgtext,
		       char *srvname, char *procname, int line)
{
	(void) dbproc; (void) msgstate; (void) srvname; (void) procname; (void) line;
	if (severity > 10)
		fprintf(stderr, "freetds-bench: server message %d: %s\n", (int) msgno, msgtext ? msgtext : "");
	return 0;
}

static int err_handler(DBPROCESS *dbproc, int severity, int dberr, int oserr, char *dberrstr, char *oserrstr)
{
	(void) dbproc; (void) severity; (void) oserr; (void) oserrstr;
	fprintf(stderr, "freetds-bench: db-lib error %d: %s\n", dberr, dberrstr ? dberrstr : "");
	return INT_CANCEL;
}

static uint64_t bytes_digest(const BYTE *p, size_t n, size_t stride)
{
	uint64_t d = n;
	for (size_t i = 0; i < n; i += stride)
		d += p[i];
	return d;
}

/* The decimal's text (as the old client took it, for NSDecimalNumber) to its unscaled integer. */
static uint64_t decimal_digest(const char *s)
{
	int negative = 0;
	uint64_t m = 0;
	for (; *s; s++) {
		if (*s == '-') negative = 1;
		else if (*s >= '0' && *s <= '9') m = m * 10 + (uint64_t) (*s - '0');
	}
	return negative ? (uint64_t) 0 - m : m;
}

static enum kind kind_of(int type, DBINT collen)
{
	switch (type) {
	case SYBINT1: return K_INT1;
	case SYBINT2: return K_INT2;
	case SYBINT4: return K_INT4;
	case SYBINT8: return K_INT8;
	case SYBBIT: case SYBBITN: return K_BIT;
	case SYBFLT8: return K_FLT8;
	case SYBREAL: return K_REAL;
	case SYBMONEY: return K_MONEY;
	case SYBMONEY4: return K_MONEY4;
	case SYBDECIMAL: case SYBNUMERIC: return K_DECIMAL;
	case SYBDATETIME: case SYBDATETIMN: return K_DATETIME;
	case SYBMSDATE: return K_DATE;
	case SYBMSDATETIME2: return K_DATETIME2;
	case 36 /* SYBUNIQUE */: return K_GUID;
	case SYBBINARY: case SYBVARBINARY: case SYBIMAGE: case 173: case 165:
		return collen > (1 << 20) || collen < 0 ? K_BIG : K_BINARY;
	default: return collen > (1 << 20) || collen < 0 ? K_BIG : K_STRING;
	}
}

/* Binds column c (1-based) to a native C buffer, like the old Objective-C client. */
static int bind_column(DBPROCESS *dbproc, int c, struct column *col)
{
	DBINT collen = dbcollen(dbproc, c);
	col->type = dbcoltype(dbproc, c);
	col->kind = kind_of(col->type, collen);
	int bind;
	switch (col->kind) {
	case K_INT1: bind = TINYBIND; col->size = sizeof(DBTINYINT); break;
	case K_INT2: bind = SMALLBIND; col->size = sizeof(DBSMALLINT); break;
	case K_INT4: bind = INTBIND; col->size = sizeof(DBINT); break;
	case K_INT8: bind = BIGINTBIND; col->size = sizeof(DBBIGINT); break;
	case K_BIT: bind = BITBIND; col->size = sizeof(DBBIT); break;
	case K_FLT8: bind = FLT8BIND; col->size = sizeof(DBFLT8); break;
	case K_REAL: bind = REALBIND; col->size = sizeof(DBREAL); break;
	case K_MONEY: bind = MONEYBIND; col->size = sizeof(DBMONEY); break;
	case K_MONEY4: bind = SMALLMONEYBIND; col->size = sizeof(DBMONEY4); break;
	case K_DECIMAL: bind = NTBSTRINGBIND; col->size = 64; break;   /* text, as the old client did */
	case K_DATETIME: bind = DATETIMEBIND; col->size = sizeof(DBDATETIME); break;
	case K_DATE: case K_DATETIME2: bind = DATETIME2BIND; col->size = sizeof(DBDATETIMEALL); break;
	case K_GUID: bind = BINARYBIND; col->size = 16; break;
	case K_STRING: bind = NTBSTRINGBIND; col->size = collen * 4 + 1; break;  /* UTF-8 may be longer than the wire */
	case K_BINARY: bind = BINARYBIND; col->size = collen; break;
	default: col->buffer = NULL; col->size = 0; return 1;    /* K_BIG: read with dbdata */
	}
	col->buffer = calloc(1, (size_t) col->size + 1);
	if (!col->buffer) return 0;
	if (dbbind(dbproc, c, bind, col->size, col->buffer) == FAIL) return 0;
	if (dbnullbind(dbproc, c, &col->status) == FAIL) return 0;
	return 1;
}

/* Converts the bound value of column c to a native C value and returns its digest. */
static uint64_t value_digest(DBPROCESS *dbproc, int c, struct column *col)
{
	if (col->kind == K_BIG) {
		BYTE *data = dbdata(dbproc, c);
		DBINT len = dbdatlen(dbproc, c);
		if (data == NULL && len == 0) return NULL_DIGEST;
		BYTE *copy = malloc((size_t) len + 1);     /* NSData dataWithBytes:length: */
		if (!copy) return 0;
		memcpy(copy, data, (size_t) len);
		uint64_t d = bytes_digest(copy, (size_t) len, 997);
		free(copy);
		return d;
	}
	if (col->status == -1) return NULL_DIGEST;
	const BYTE *b = col->buffer;
	switch (col->kind) {
	case K_INT1: return (uint64_t) *(const DBTINYINT *) b;
	case K_INT2: return (uint64_t) (int64_t) *(const DBSMALLINT *) b;
	case K_INT4: return (uint64_t) (int64_t) *(const DBINT *) b;
	case K_INT8: return (uint64_t) *(const DBBIGINT *) b;
	case K_BIT: return *(const DBBIT *) b ? 1 : 0;
	case K_FLT8: { double d; memcpy(&d, b, 8); uint64_t u; memcpy(&u, &d, 8); return u; }
	case K_REAL: { float f; memcpy(&f, b, 4); double d = f; uint64_t u; memcpy(&u, &d, 8); return u; }
	case K_MONEY: {
		const DBMONEY *m = (const DBMONEY *) b;
		return ((uint64_t) (uint32_t) m->mnyhigh << 32) | (uint32_t) m->mnylow;
	}
	case K_MONEY4: return (uint64_t) (int64_t) ((const DBMONEY4 *) b)->mny4;
	case K_DECIMAL: return decimal_digest((const char *) b);
	case K_DATETIME: {
		const DBDATETIME *dt = (const DBDATETIME *) b;
		DBDATEREC2 rec;   /* the old client built an NSDate from the cracked parts */
		dbanydatecrack(dbproc, &rec, SYBDATETIME, b);
		return (uint64_t) ((int64_t) dt->dtdays * 25920000 + dt->dttime) + (uint64_t) (rec.year == 0);
	}
	case K_DATE: case K_DATETIME2: {
		const DBDATETIMEALL *all = (const DBDATETIMEALL *) b;
		DBDATEREC2 rec;
		dbanydatecrack(dbproc, &rec, SYBMSDATETIME2, b);
		if (col->kind == K_DATE) return (uint64_t) (int64_t) all->date + (uint64_t) (rec.year == 0);
		return (uint64_t) ((int64_t) all->date * 864000000000LL + (int64_t) all->time) + (uint64_t) (rec.year == 0);
	}
	case K_GUID: return bytes_digest(b, 16, 1);
	case K_STRING: {
		size_t n = strlen((const char *) b);   /* NSString stringWithUTF8String: */
		return bytes_digest(b, n, 1);
	}
	case K_BINARY: return bytes_digest(b, (size_t) dbdatlen(dbproc, c), 997);
	default: return 0;
	}
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s HOST:PORT SQL PACKETSIZE\n", argv[0]);
		return 2;
	}
	malloc_count = (unsigned long long (*)(void)) dlsym(RTLD_DEFAULT, "bench_malloc_count");
	int packet = atoi(argv[3]);
	int trace = getenv("BENCH_TRACE") != NULL;   /* every value's digest on stderr */
	if (dbinit() == FAIL) { fprintf(stderr, "dbinit failed\n"); return 1; }
	dberrhandle(err_handler);
	dbmsghandle(msg_handler);
	dbsetlogintime(10);
	dbsettime(600);
	LOGINREC *login = dblogin();
	DBSETLUSER(login, "bench");
	DBSETLPWD(login, "bench");
	DBSETLAPP(login, "sqlclient-bench");
	DBSETLCHARSET(login, "UTF-8");
	dbsetlversion(login, DBVERSION_74);
	if (packet > 0) DBSETLPACKET(login, packet);
	DBPROCESS *dbproc = dbopen(login, argv[1]);
	if (!dbproc) { fprintf(stderr, "dbopen failed\n"); return 1; }

	uint64_t checksum = 0;
	long long rows = 0;
	unsigned long long allocs0 = malloc_count ? malloc_count() : 0;
	double t0 = now(), c0 = cpu_now();
	long f0 = faults_now();
	if (dbcmd(dbproc, argv[2]) == FAIL || dbsqlexec(dbproc) == FAIL) {
		fprintf(stderr, "dbsqlexec failed\n");
		return 1;
	}
	RETCODE rc;
	while ((rc = dbresults(dbproc)) != NO_MORE_RESULTS) {
		if (rc == FAIL) { fprintf(stderr, "dbresults failed\n"); return 1; }
		int ncols = dbnumcols(dbproc);
		if (ncols <= 0) continue;
		struct column *cols = calloc((size_t) ncols, sizeof *cols);
		if (!cols) return 1;
		for (int c = 1; c <= ncols; c++)
			if (!bind_column(dbproc, c, &cols[c - 1])) { fprintf(stderr, "dbbind failed (column %d)\n", c); return 1; }
		RETCODE row;
		while ((row = dbnextrow(dbproc)) != NO_MORE_ROWS) {
			if (row != REG_ROW) { fprintf(stderr, "dbnextrow returned %d\n", (int) row); return 1; }
			rows++;
			for (int c = 1; c <= ncols; c++) {
				uint64_t d = value_digest(dbproc, c, &cols[c - 1]);
				if (trace) fprintf(stderr, "%lld %d %016" PRIX64 "\n", rows, c, d);
				checksum = checksum * MIX + d;
			}
		}
		for (int c = 0; c < ncols; c++) free(cols[c].buffer);
		free(cols);
	}
	double seconds = now() - t0;
	double cpu_seconds = cpu_now() - c0;
	long faults = faults_now() - f0;
	long long allocs = malloc_count ? (long long) (malloc_count() - allocs0) : -1;
	int negotiated = dbgetpacket(dbproc);
	dbclose(dbproc);
	dbexit();
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("{\"rows\":%lld,\"seconds\":%.6f,\"cpu_seconds\":%.6f,\"page_faults\":%ld,\"checksum\":\"%016" PRIX64 "\",\"allocations\":%lld,\"maxrss_kb\":%ld,\"packet_size\":%d}\n",
	       rows, seconds, cpu_seconds, faults, checksum, allocs, (long) ru.ru_maxrss, negotiated);
	return 0;
}
