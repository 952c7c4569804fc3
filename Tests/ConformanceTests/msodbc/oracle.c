/*
 * msodbc/oracle.c — Microsoft ODBC Driver 18's side of SQLClient's conformance oracle.
 *
 * Not part of the SwiftPM build: ConformanceTests compiles it at test time with
 *     cc -o msodbc-oracle oracle.c -lodbc
 * (unixODBC's driver manager, Debian unixodbc-dev) and skips, with a message, when the header,
 * the library or the driver (scripts/msodbc.sh installs it into the project's .venv) is absent.
 *
 * Usage: msodbc-oracle DRIVER HOST:PORT BATCHFILE
 *   DRIVER    path of libmsodbcsql-18.*.so (no odbcinst.ini needed)
 *   BATCHFILE SQL batches separated by lines holding exactly "-- @@batch"; a batch
 *             "-- @@rpc NAME" followed by a line "-- @@out T1 T2 ..." calls procedure NAME
 *             with one output parameter per T (ODBC call escape {call NAME(?, ...)}); T names
 *             how the parameter is bound (see bind_output below)
 *
 * Connects with SQLDriverConnect (Encrypt=no: the replay server answers ENCRYPT_NOT_SUP), keeps
 * the rowset size at 1 (a larger one makes the driver open a server cursor, which a replay server
 * does not serve), runs each batch with SQLExecDirectW, reads every value with SQLGetData in the
 * C type that carries it without loss, and prints the same lines as ../freetds/oracle.c (BATCH,
 * RESULT, COL <i> <SQL type> <name>, ROW, VAL, COUNT, RETSTATUS, RET, MSG/ERR, FAIL, END) with
 * every value in the canonical text of SQLClient's DESIGN.md:
 *   integers from SQL_C_SBIGINT, bit from SQL_C_BIT, real %.9g from SQL_C_FLOAT, float %.17g
 *   from SQL_C_DOUBLE, decimal/numeric/money from the driver's SQL_C_CHAR text (a missing 0
 *   before the point added), uniqueidentifier from SQL_C_GUID, date/time/datetime/datetime2/
 *   datetimeoffset from their structs (fraction digits cut to the column's scale), character
 *   and xml types from SQL_C_WCHAR (UTF-16, converted here to UTF-8, no iconv), binary types
 *   from SQL_C_BINARY as 0x + uppercase hex; sql_variant by its base type
 *   (SQL_CA_SS_VARIANT_SQL_TYPE), read like a column of that type. A value the driver will not
 *   give (SQLGetData fails) is `VAL <i> REFUSED`, followed by its ERR lines.
 * A batch still running after BATCH_SECONDS ends the run with `FAIL timeout` and `END` (exit 3).
 * ERR lines are `ERR <SQLSTATE> <native> <text as JSON>` from SQLGetDiagRecW.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <inttypes.h>
#include <signal.h>
#include <unistd.h>
#include <sql.h>
#include <sqlext.h>
#include <sqlucode.h>

/* Microsoft ODBC driver specifics (msodbcsql.h is not installed with the driver from PyPI). */
#define SQL_SS_VARIANT (-150)
#define SQL_SS_UDT (-151)
#define SQL_SS_XML (-152)
#define SQL_SS_TIME2 (-154)
#define SQL_SS_TIMESTAMPOFFSET (-155)
#define SQL_C_SS_TIME2 (0x4000)
#define SQL_C_SS_TIMESTAMPOFFSET (0x4001)
#define SQL_CA_SS_VARIANT_TYPE 1215
#define SQL_CA_SS_VARIANT_SQL_TYPE 1216

/* A batch that takes longer than this is reported as FAIL timeout (the replay server answers at once). */
#define BATCH_SECONDS 5

typedef struct {
	SQLUSMALLINT hour, minute, second;
	SQLUINTEGER fraction;
} SS_TIME2;

typedef struct {
	SQLSMALLINT year;
	SQLUSMALLINT month, day, hour, minute, second;
	SQLUINTEGER fraction;
	SQLSMALLINT timezone_hour, timezone_minute;
} SS_TIMESTAMPOFFSET;

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

static void print_text(const char *s) { json(s, strlen(s)); }

/* UTF-16 code units to UTF-8 (a lone surrogate becomes U+FFFD, which the comparison catches). */
static char *utf16_to_utf8(const SQLWCHAR *w, size_t n, size_t *outlen)
{
	char *out = malloc(n * 3 + 1);
	size_t o = 0;
	if (!out) { *outlen = 0; return NULL; }
	for (size_t i = 0; i < n; i++) {
		uint32_t c = w[i];
		if (c >= 0xD800 && c <= 0xDBFF && i + 1 < n && w[i + 1] >= 0xDC00 && w[i + 1] <= 0xDFFF) {
			c = 0x10000 + ((c - 0xD800) << 10) + (w[i + 1] - 0xDC00);
			i++;
		} else if (c >= 0xD800 && c <= 0xDFFF) {
			c = 0xFFFD;
		}
		if (c < 0x80) out[o++] = (char) c;
		else if (c < 0x800) { out[o++] = (char) (0xC0 | c >> 6); out[o++] = (char) (0x80 | (c & 63)); }
		else if (c < 0x10000) {
			out[o++] = (char) (0xE0 | c >> 12); out[o++] = (char) (0x80 | (c >> 6 & 63)); out[o++] = (char) (0x80 | (c & 63));
		} else {
			out[o++] = (char) (0xF0 | c >> 18); out[o++] = (char) (0x80 | (c >> 12 & 63));
			out[o++] = (char) (0x80 | (c >> 6 & 63)); out[o++] = (char) (0x80 | (c & 63));
		}
	}
	out[o] = 0;
	*outlen = o;
	return out;
}

static size_t wlen(const SQLWCHAR *w) { size_t n = 0; while (w[n]) n++; return n; }

static SQLWCHAR *to_wide(const char *s)
{
	/* ASCII/UTF-8 to UTF-16 (the batches are ASCII apart from names, which are ASCII too). */
	size_t n = strlen(s);
	SQLWCHAR *w = calloc(n + 1, sizeof(SQLWCHAR));
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char) s[i];
		uint32_t cp;
		int k;
		if (c < 0x80) { cp = c; k = 1; }
		else if ((c & 0xE0) == 0xC0 && i + 1 < n) { cp = (c & 31u) << 6 | (s[i + 1] & 63u); k = 2; }
		else if ((c & 0xF0) == 0xE0 && i + 2 < n) { cp = (c & 15u) << 12 | (s[i + 1] & 63u) << 6 | (s[i + 2] & 63u); k = 3; }
		else if (i + 3 < n) { cp = (c & 7u) << 18 | (s[i + 1] & 63u) << 12 | (s[i + 2] & 63u) << 6 | (s[i + 3] & 63u); k = 4; }
		else { cp = 0xFFFD; k = 1; }
		if (cp >= 0x10000) { cp -= 0x10000; w[o++] = (SQLWCHAR) (0xD800 + (cp >> 10)); w[o++] = (SQLWCHAR) (0xDC00 + (cp & 1023)); }
		else w[o++] = (SQLWCHAR) cp;
		i += (size_t) k;
	}
	w[o] = 0;
	return w;
}

static void diag(SQLSMALLINT type, SQLHANDLE h)
{
	SQLWCHAR state[8], text[1024];
	SQLINTEGER native;
	SQLSMALLINT len;
	for (SQLSMALLINT i = 1; SQLGetDiagRecW(type, h, i, state, &native, text, 1023, &len) == SQL_SUCCESS; i++) {
		size_t n1, n2;
		char *s = utf16_to_utf8(state, wlen(state), &n1);
		char *t = utf16_to_utf8(text, (size_t) (len < 1023 ? len : 1023), &n2);
		printf("ERR %s %d ", s ? s : "?", (int) native);
		json(t ? t : "", t ? n2 : 0);
		putchar('\n');
		free(s); free(t);
	}
}

static void print_hex(const unsigned char *p, size_t n)
{
	static const char digits[] = "0123456789ABCDEF";
	putchar('"'); putchar('0'); putchar('x');
	for (size_t i = 0; i < n; i++) { putchar(digits[p[i] >> 4]); putchar(digits[p[i] & 15]); }
	putchar('"');
}

static void fraction(char *out, size_t size, unsigned long ns, int scale)
{
	if (scale <= 0) { out[0] = 0; return; }
	char digits[16];
	snprintf(digits, sizeof digits, "%09lu", ns);
	if (scale > 9) scale = 9;
	digits[scale] = 0;
	snprintf(out, size, ".%s", digits);
}

/* Reads a long value in pieces (SQLGetData until SQL_NO_DATA). Returns the byte count, or -1 for
 * NULL, -2 for an error (diagnostics printed). `unit` is 2 for SQL_C_WCHAR, 1 for SQL_C_BINARY. */
static long read_long(SQLHSTMT st, SQLUSMALLINT col, SQLSMALLINT ctype, unsigned char **out)
{
	size_t cap = 8192, used = 0;
	unsigned char *buf = malloc(cap + 2);
	size_t unit = ctype == SQL_C_WCHAR ? 2 : 1;
	for (;;) {
		SQLLEN ind = 0;
		size_t room = cap - used;
		SQLRETURN rc = SQLGetData(st, col, ctype, buf + used, (SQLLEN) (room + (unit == 2 ? 2 : 0)), &ind);
		if (rc == SQL_NO_DATA) break;
		if (rc == SQL_ERROR) { free(buf); return -2; }
		if (ind == SQL_NULL_DATA) { free(buf); return -1; }
		if (rc == SQL_SUCCESS_WITH_INFO && (ind == SQL_NO_TOTAL || (size_t) ind > room)) {
			/* Truncated piece: the driver filled the buffer (less the terminator for WCHAR). */
			size_t got = room - (room % unit);
			used += got;
			size_t more = ind == SQL_NO_TOTAL ? cap : (size_t) ind - got;
			if (more < 8192) more = 8192;
			cap = used + more;
			buf = realloc(buf, cap + 2);
			continue;
		}
		used += (size_t) ind;
		break;
	}
	*out = buf;
	return (long) used;
}

static void print_decimal_text(const char *s)
{
	/* The driver writes ".5" and "-.5": canonical text has the 0 before the point. */
	char buf[128];
	if (s[0] == '.') snprintf(buf, sizeof buf, "0%s", s);
	else if (s[0] == '-' && s[1] == '.') snprintf(buf, sizeof buf, "-0%s", s + 1);
	else snprintf(buf, sizeof buf, "%s", s);
	print_text(buf);
}

/* The driver would not give the value: `REFUSED`, then its diagnostics on lines of their own. */
static void refused(SQLHSTMT st)
{
	fputs("REFUSED\n", stdout);
	diag(SQL_HANDLE_STMT, st);
}

/* Prints the value of column `col`, whose SQL type is `sqltype` and scale `scale`: NULL or JSON text. */
static void print_value(SQLHSTMT st, SQLUSMALLINT col, SQLSMALLINT sqltype, SQLSMALLINT scale, const char *typename)
{
	SQLLEN ind = 0;
	SQLRETURN rc = SQL_SUCCESS;
	char buf[256];
	switch (sqltype) {
	case SQL_BIT: {
		unsigned char v;
		rc = SQLGetData(st, col, SQL_C_BIT, &v, sizeof v, &ind);
		if (SQL_SUCCEEDED(rc) && ind != SQL_NULL_DATA) { printf("\"%d\"", v ? 1 : 0); return; }
		break;
	}
	case SQL_TINYINT: case SQL_SMALLINT: case SQL_INTEGER: case SQL_BIGINT: {
		int64_t v;
		rc = SQLGetData(st, col, SQL_C_SBIGINT, &v, sizeof v, &ind);
		if (SQL_SUCCEEDED(rc) && ind != SQL_NULL_DATA) { printf("\"%" PRId64 "\"", v); return; }
		break;
	}
	case SQL_REAL: {
		float v;
		rc = SQLGetData(st, col, SQL_C_FLOAT, &v, sizeof v, &ind);
		if (SQL_SUCCEEDED(rc) && ind != SQL_NULL_DATA) { printf("\"%.9g\"", (double) v); return; }
		break;
	}
	case SQL_FLOAT: case SQL_DOUBLE: {
		double v;
		rc = SQLGetData(st, col, SQL_C_DOUBLE, &v, sizeof v, &ind);
		if (SQL_SUCCEEDED(rc) && ind != SQL_NULL_DATA) { printf("\"%.17g\"", v); return; }
		break;
	}
	case SQL_DECIMAL: case SQL_NUMERIC: {
		rc = SQLGetData(st, col, SQL_C_CHAR, buf, sizeof buf, &ind);
		if (SQL_SUCCEEDED(rc) && ind != SQL_NULL_DATA) { print_decimal_text(buf); return; }
		break;
	}
	case SQL_GUID: {
		SQLGUID g;
		rc = SQLGetData(st, col, SQL_C_GUID, &g, sizeof g, &ind);
		if (SQL_SUCCEEDED(rc) && ind != SQL_NULL_DATA) {
			snprintf(buf, sizeof buf, "%08X-%04X-%04X-%02X%02X-%02X%02X%02X%02X%02X%02X", (unsigned) g.Data1,
				 (unsigned) g.Data2, (unsigned) g.Data3, g.Data4[0], g.Data4[1], g.Data4[2], g.Data4[3],
				 g.Data4[4], g.Data4[5], g.Data4[6], g.Data4[7]);
			print_text(buf);
			return;
		}
		break;
	}
	case SQL_TYPE_DATE: {
		SQL_DATE_STRUCT d;
		rc = SQLGetData(st, col, SQL_C_TYPE_DATE, &d, sizeof d, &ind);
		if (SQL_SUCCEEDED(rc) && ind != SQL_NULL_DATA) {
			snprintf(buf, sizeof buf, "%04d-%02u-%02u", d.year, d.month, d.day);
			print_text(buf);
			return;
		}
		break;
	}
	case SQL_SS_TIME2: {
		SS_TIME2 t;
		char frac[24];
		rc = SQLGetData(st, col, SQL_C_SS_TIME2, &t, sizeof t, &ind);
		if (SQL_SUCCEEDED(rc) && ind != SQL_NULL_DATA) {
			fraction(frac, sizeof frac, t.fraction, scale);
			snprintf(buf, sizeof buf, "%02u:%02u:%02u%s", t.hour, t.minute, t.second, frac);
			print_text(buf);
			return;
		}
		break;
	}
	case SQL_TYPE_TIMESTAMP: {
		SQL_TIMESTAMP_STRUCT t;
		char frac[24];
		rc = SQLGetData(st, col, SQL_C_TYPE_TIMESTAMP, &t, sizeof t, &ind);
		if (SQL_SUCCEEDED(rc) && ind != SQL_NULL_DATA) {
			fraction(frac, sizeof frac, t.fraction, scale);
			snprintf(buf, sizeof buf, "%04d-%02u-%02u %02u:%02u:%02u%s", t.year, t.month, t.day, t.hour, t.minute,
				 t.second, frac);
			print_text(buf);
			return;
		}
		break;
	}
	case SQL_SS_TIMESTAMPOFFSET: {
		SS_TIMESTAMPOFFSET t;
		char frac[24];
		rc = SQLGetData(st, col, SQL_C_SS_TIMESTAMPOFFSET, &t, sizeof t, &ind);
		if (SQL_SUCCEEDED(rc) && ind != SQL_NULL_DATA) {
			/* Hour and minute carry the offset's sign (-00:30 is 0 and -30). */
			int off = t.timezone_hour * 60 + t.timezone_minute;
			int a = off < 0 ? -off : off;
			fraction(frac, sizeof frac, t.fraction, scale);
			snprintf(buf, sizeof buf, "%04d-%02u-%02u %02u:%02u:%02u%s %c%02d:%02d", t.year, t.month, t.day, t.hour,
				 t.minute, t.second, frac, off < 0 ? '-' : '+', a / 60, a % 60);
			print_text(buf);
			return;
		}
		break;
	}
	case SQL_BINARY: case SQL_VARBINARY: case SQL_LONGVARBINARY: case SQL_SS_UDT: {
		unsigned char *data = NULL;
		long n = read_long(st, col, SQL_C_BINARY, &data);
		if (n == -1) { fputs("NULL", stdout); return; }
		if (n < 0) { refused(st); return; }
		print_hex(data, (size_t) n);
		free(data);
		return;
	}
	case SQL_CHAR: case SQL_VARCHAR: case SQL_LONGVARCHAR: case SQL_WCHAR: case SQL_WVARCHAR: case SQL_WLONGVARCHAR:
	case SQL_SS_XML: {
		unsigned char *data = NULL;
		long n = read_long(st, col, SQL_C_WCHAR, &data);
		if (n == -1) { fputs("NULL", stdout); return; }
		if (n < 0) { refused(st); return; }
		size_t len;
		char *u = utf16_to_utf8((const SQLWCHAR *) data, (size_t) n / 2, &len);
		json(u ? u : "", u ? len : 0);
		free(u);
		free(data);
		return;
	}
	case SQL_SS_VARIANT: {
		/* The base type is known once the value has been touched with a zero-length SQLGetData. */
		unsigned char probe;
		rc = SQLGetData(st, col, SQL_C_BINARY, &probe, 0, &ind);
		if (rc == SQL_ERROR) break;
		if (ind == SQL_NULL_DATA) { fputs("NULL", stdout); return; }
		SQLLEN base = 0, bscale = 0;
		if (!SQL_SUCCEEDED(SQLColAttribute(st, col, SQL_CA_SS_VARIANT_SQL_TYPE, NULL, 0, NULL, &base))) {
			refused(st);
			return;
		}
		SQLColAttribute(st, col, SQL_DESC_SCALE, NULL, 0, NULL, &bscale);
		if (base == SQL_SS_VARIANT) { print_text("<nested variant>"); return; }
		print_value(st, col, (SQLSMALLINT) base, (SQLSMALLINT) bscale, typename);
		return;
	}
	default:
		printf("UNSUPPORTED %d", (int) sqltype);
		return;
	}
	if (rc == SQL_ERROR) {
		refused(st);
		return;
	}
	fputs("NULL", stdout);
	(void) typename;
}

/* A batch the driver never finishes (it waits for bytes a malformed value made it expect): say
 * so and stop; the caller runs the remaining batches in a new process. */
static void on_alarm(int sig)
{
	static const char msg[] = "\nFAIL timeout\nEND\n";
	(void) sig;
	ssize_t ignored = write(1, msg, sizeof msg - 1);
	(void) ignored;
	_exit(3);
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

static SQLHDBC connect_to(SQLHENV env, const char *driver, const char *hostport)
{
	SQLHDBC dbc;
	char conn[2048], host[256];
	const char *colon = strrchr(hostport, ':');
	if (!colon || (size_t) (colon - hostport) >= sizeof host) return NULL;
	memcpy(host, hostport, (size_t) (colon - hostport));
	host[colon - hostport] = 0;
	snprintf(conn, sizeof conn,
		 "DRIVER={%s};SERVER=%s,%s;UID=oracle;PWD=oracle;Encrypt=no;APP=sqlclient-oracle",
		 driver, host, colon + 1);
	if (!SQL_SUCCEEDED(SQLAllocHandle(SQL_HANDLE_DBC, env, &dbc))) return NULL;
	SQLSetConnectAttr(dbc, SQL_ATTR_LOGIN_TIMEOUT, (SQLPOINTER) 10, 0);
	SQLWCHAR *w = to_wide(conn);
	SQLRETURN rc = SQLDriverConnectW(dbc, NULL, w, SQL_NTS, NULL, 0, NULL, SQL_DRIVER_NOPROMPT);
	free(w);
	if (!SQL_SUCCEEDED(rc)) {
		diag(SQL_HANDLE_DBC, dbc);
		SQLFreeHandle(SQL_HANDLE_DBC, dbc);
		return NULL;
	}
	return dbc;
}

/* Output parameter binding by name: int, bigint, ... (see the Swift side, MSODBCOracle). */
typedef struct {
	SQLSMALLINT ctype, sqltype;
	SQLULEN colsize;
	SQLSMALLINT digits;
	SQLLEN buflen;
	void *buf;
	SQLLEN ind;
} OutParam;

static void bind_output(SQLHSTMT st, SQLUSMALLINT n, const char *spec, OutParam *p)
{
	/* spec: SQLTYPE:COLSIZE:DIGITS (the SQL type as an ODBC number); read back per that type. */
	int sqltype = 0, size = 0, digits = 0;
	sscanf(spec, "%d:%d:%d", &sqltype, &size, &digits);
	p->sqltype = (SQLSMALLINT) sqltype;
	p->colsize = (SQLULEN) size;
	p->digits = (SQLSMALLINT) digits;
	switch (sqltype) {
	case SQL_BIT: p->ctype = SQL_C_BIT; p->buflen = 1; break;
	case SQL_TINYINT: case SQL_SMALLINT: case SQL_INTEGER: case SQL_BIGINT: p->ctype = SQL_C_SBIGINT; p->buflen = 8; break;
	case SQL_REAL: p->ctype = SQL_C_FLOAT; p->buflen = 4; break;
	case SQL_FLOAT: case SQL_DOUBLE: p->ctype = SQL_C_DOUBLE; p->buflen = 8; break;
	case SQL_DECIMAL: case SQL_NUMERIC: p->ctype = SQL_C_CHAR; p->buflen = 128; break;
	case SQL_GUID: p->ctype = SQL_C_GUID; p->buflen = sizeof(SQLGUID); break;
	case SQL_TYPE_DATE: p->ctype = SQL_C_TYPE_DATE; p->buflen = sizeof(SQL_DATE_STRUCT); break;
	case SQL_SS_TIME2: p->ctype = SQL_C_SS_TIME2; p->buflen = sizeof(SS_TIME2); break;
	case SQL_TYPE_TIMESTAMP: p->ctype = SQL_C_TYPE_TIMESTAMP; p->buflen = sizeof(SQL_TIMESTAMP_STRUCT); break;
	case SQL_SS_TIMESTAMPOFFSET: p->ctype = SQL_C_SS_TIMESTAMPOFFSET; p->buflen = sizeof(SS_TIMESTAMPOFFSET); break;
	case SQL_BINARY: case SQL_VARBINARY: case SQL_LONGVARBINARY: p->ctype = SQL_C_BINARY; p->buflen = 65536; break;
	default: p->ctype = SQL_C_WCHAR; p->buflen = 65536; break;
	}
	p->buf = calloc(1, (size_t) p->buflen + 2);
	p->ind = SQL_NULL_DATA;
	SQLRETURN rc = SQLBindParameter(st, n, SQL_PARAM_OUTPUT, p->ctype, p->sqltype, p->colsize, p->digits, p->buf,
					p->buflen, &p->ind);
	if (!SQL_SUCCEEDED(rc)) diag(SQL_HANDLE_STMT, st);
}

static void print_output(OutParam *p)
{
	char buf[256], frac[24];
	if (p->ind == SQL_NULL_DATA) { fputs("NULL", stdout); return; }
	switch (p->ctype) {
	case SQL_C_BIT: printf("\"%d\"", *(unsigned char *) p->buf ? 1 : 0); return;
	case SQL_C_SBIGINT: printf("\"%" PRId64 "\"", *(int64_t *) p->buf); return;
	case SQL_C_FLOAT: printf("\"%.9g\"", (double) *(float *) p->buf); return;
	case SQL_C_DOUBLE: printf("\"%.17g\"", *(double *) p->buf); return;
	case SQL_C_CHAR: print_decimal_text(p->buf); return;
	case SQL_C_GUID: {
		SQLGUID *g = p->buf;
		snprintf(buf, sizeof buf, "%08X-%04X-%04X-%02X%02X-%02X%02X%02X%02X%02X%02X", (unsigned) g->Data1,
			 (unsigned) g->Data2, (unsigned) g->Data3, g->Data4[0], g->Data4[1], g->Data4[2], g->Data4[3],
			 g->Data4[4], g->Data4[5], g->Data4[6], g->Data4[7]);
		print_text(buf);
		return;
	}
	case SQL_C_TYPE_DATE: {
		SQL_DATE_STRUCT *d = p->buf;
		snprintf(buf, sizeof buf, "%04d-%02u-%02u", d->year, d->month, d->day);
		print_text(buf);
		return;
	}
	case SQL_C_SS_TIME2: {
		SS_TIME2 *t = p->buf;
		fraction(frac, sizeof frac, t->fraction, p->digits);
		snprintf(buf, sizeof buf, "%02u:%02u:%02u%s", t->hour, t->minute, t->second, frac);
		print_text(buf);
		return;
	}
	case SQL_C_TYPE_TIMESTAMP: {
		SQL_TIMESTAMP_STRUCT *t = p->buf;
		fraction(frac, sizeof frac, t->fraction, p->digits);
		snprintf(buf, sizeof buf, "%04d-%02u-%02u %02u:%02u:%02u%s", t->year, t->month, t->day, t->hour, t->minute,
			 t->second, frac);
		print_text(buf);
		return;
	}
	case SQL_C_SS_TIMESTAMPOFFSET: {
		SS_TIMESTAMPOFFSET *t = p->buf;
		int off = t->timezone_hour * 60 + t->timezone_minute;
		int a = off < 0 ? -off : off;
		fraction(frac, sizeof frac, t->fraction, p->digits);
		snprintf(buf, sizeof buf, "%04d-%02u-%02u %02u:%02u:%02u%s %c%02d:%02d", t->year, t->month, t->day, t->hour,
			 t->minute, t->second, frac, off < 0 ? '-' : '+', a / 60, a % 60);
		print_text(buf);
		return;
	}
	case SQL_C_BINARY: {
		SQLLEN n = p->ind > p->buflen ? p->buflen : p->ind;
		print_hex(p->buf, (size_t) n);
		return;
	}
	default: {
		SQLLEN n = p->ind > p->buflen ? p->buflen : p->ind;
		size_t len;
		char *u = utf16_to_utf8(p->buf, (size_t) n / 2, &len);
		json(u ? u : "", u ? len : 0);
		free(u);
		return;
	}
	}
}

/* Prints every result of an executed statement; returns 0, or -1 when the driver failed. */
static int print_results(SQLHSTMT st, SQLRETURN rc)
{
	for (;;) {
		if (rc == SQL_ERROR) { diag(SQL_HANDLE_STMT, st); printf("FAIL execute\n"); return -1; }
		if (rc == SQL_SUCCESS_WITH_INFO) diag(SQL_HANDLE_STMT, st);
		if (rc == SQL_NO_DATA) break;
		SQLSMALLINT ncols = 0;
		SQLNumResultCols(st, &ncols);
		if (ncols > 0) {
			SQLSMALLINT types[1100], scales[1100];
			char names[1100][64];
			if (ncols > 1100) { printf("FAIL too many columns\n"); return -1; }
			printf("RESULT\n");
			for (SQLUSMALLINT c = 1; c <= (SQLUSMALLINT) ncols; c++) {
				SQLWCHAR name[256];
				SQLSMALLINT nlen = 0, type = 0, digits = 0, nullable = 0;
				SQLULEN size = 0;
				SQLDescribeColW(st, c, name, 255, &nlen, &type, &size, &digits, &nullable);
				types[c - 1] = type;
				scales[c - 1] = digits;
				size_t len;
				char *u = utf16_to_utf8(name, (size_t) (nlen < 255 ? nlen : 255), &len);
				SQLWCHAR tname[128];
				SQLSMALLINT tlen = 0;
				SQLColAttributeW(st, c, SQL_DESC_TYPE_NAME, tname, sizeof tname, &tlen, NULL);
				size_t tl;
				char *tu = utf16_to_utf8(tname, (size_t) tlen / 2, &tl);
				snprintf(names[c - 1], sizeof names[c - 1], "%s", tu ? tu : "");
				printf("COL %d %d ", c, type);
				json(u ? u : "", u ? len : 0);
				putchar('\n');
				free(u); free(tu);
			}
			SQLRETURN f;
			while ((f = SQLFetch(st)) != SQL_NO_DATA) {
				if (f == SQL_ERROR) { diag(SQL_HANDLE_STMT, st); printf("FAIL fetch\n"); break; }
				printf("ROW\n");
				for (SQLUSMALLINT c = 1; c <= (SQLUSMALLINT) ncols; c++) {
					printf("VAL %d ", c);
					print_value(st, c, types[c - 1], scales[c - 1], names[c - 1]);
					putchar('\n');
				}
			}
			if (f == SQL_ERROR) return -1;
		}
		SQLLEN count = -1;
		SQLRowCount(st, &count);
		printf("COUNT %ld\n", (long) count);
		rc = SQLMoreResults(st);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s DRIVER HOST:PORT BATCHFILE\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	signal(SIGALRM, on_alarm);
	char *batches = read_file(argv[3]);
	if (!batches) { printf("FAIL read %s\n", argv[3]); return 1; }
	SQLHENV env;
	SQLAllocHandle(SQL_HANDLE_ENV, SQL_NULL_HANDLE, &env);
	SQLSetEnvAttr(env, SQL_ATTR_ODBC_VERSION, (SQLPOINTER) SQL_OV_ODBC3_80, 0)  /* 3.8: driver C types (SQL_C_SS_TIME2) allowed */;
	SQLHDBC dbc = connect_to(env, argv[1], argv[2]);
	if (!dbc) { printf("FAIL connect\n"); printf("END\n"); fflush(stdout); return 1; }

	int batch = 0;
	char *cursor = batches;
	const char *sep = "\n-- @@batch\n";
	while (cursor && *cursor) {
		char *next = strstr(cursor, sep);
		if (next) { *next = 0; next += strlen(sep); }
		if (!strncmp(cursor, "-- @@batch\n", 11)) cursor += 11;
		if (*cursor == 0) { cursor = next; continue; }
		printf("BATCH %d\n", batch++);
		fflush(stdout);
		alarm(BATCH_SECONDS);
		SQLUINTEGER dead = SQL_CD_FALSE;
		SQLGetConnectAttr(dbc, SQL_ATTR_CONNECTION_DEAD, &dead, 0, NULL);
		if (dead == SQL_CD_TRUE) {
			SQLDisconnect(dbc);
			SQLFreeHandle(SQL_HANDLE_DBC, dbc);
			dbc = connect_to(env, argv[1], argv[2]);
			printf("RECONNECT\n");
			if (!dbc) { printf("FAIL connect\n"); break; }
		}
		SQLHSTMT st;
		SQLAllocHandle(SQL_HANDLE_STMT, dbc, &st);
		if (!strncmp(cursor, "-- @@rpc ", 9)) {
			char name[256], sql[8192];
			snprintf(name, sizeof name, "%s", cursor + 9);
			name[strcspn(name, "\n")] = 0;
			char *outs = strstr(cursor, "\n-- @@out");
			OutParam params[512];
			int np = 0;
			if (outs) {
				char *p = outs + 9;
				while (*p && *p != '\n' && np < 512) {
					while (*p == ' ') p++;
					if (!*p || *p == '\n') break;
					char spec[64];
					size_t k = strcspn(p, " \n");
					snprintf(spec, sizeof spec, "%.*s", (int) k, p);
					bind_output(st, (SQLUSMALLINT) (np + 1), spec, &params[np]);
					np++;
					p += k;
				}
			}
			size_t o = (size_t) snprintf(sql, sizeof sql, "{? = call %s(", name);
			for (int i = 0; i < np && o + 4 < sizeof sql; i++) o += (size_t) snprintf(sql + o, sizeof sql - o, i ? ",?" : "?");
			snprintf(sql + o, sizeof sql - o, ")}");
			/* Parameter 1 is the return status: shift the outputs by one. */
			for (int i = np; i > 0; i--) {
				SQLBindParameter(st, (SQLUSMALLINT) (i + 1), SQL_PARAM_OUTPUT, params[i - 1].ctype, params[i - 1].sqltype,
						 params[i - 1].colsize, params[i - 1].digits, params[i - 1].buf, params[i - 1].buflen,
						 &params[i - 1].ind);
			}
			/* Named parameters (@p1, ...): the driver matches RETURNVALUE tokens to bound
			   parameters by name. */
			SQLHDESC ipd = NULL;
			SQLGetStmtAttr(st, SQL_ATTR_IMP_PARAM_DESC, &ipd, 0, NULL);
			for (int i = 0; i < np && ipd; i++) {
				char pname[16];
				snprintf(pname, sizeof pname, "@p%d", i + 1);
				SQLWCHAR *wn = to_wide(pname);
				SQLSetDescFieldW(ipd, (SQLSMALLINT) (i + 2), SQL_DESC_NAME, wn, SQL_NTS);
				SQLSetDescField(ipd, (SQLSMALLINT) (i + 2), SQL_DESC_UNNAMED, (SQLPOINTER) SQL_NAMED, 0);
				free(wn);
			}
			SQLINTEGER status = -99;
			SQLLEN sind = 0;
			SQLBindParameter(st, 1, SQL_PARAM_OUTPUT, SQL_C_SLONG, SQL_INTEGER, 0, 0, &status, 0, &sind);
			SQLWCHAR *w = to_wide(sql);
			SQLRETURN rc = SQLExecDirectW(st, w, SQL_NTS);
			free(w);
			if (print_results(st, rc) == 0) {
				if (sind != SQL_NULL_DATA) printf("RETSTATUS %d\n", (int) status);
				for (int i = 0; i < np; i++) {
					printf("RET %d \"@p%d\" ", i + 1, i + 1);
					print_output(&params[i]);
					putchar('\n');
				}
			}
			for (int i = 0; i < np; i++) free(params[i].buf);
		} else {
			SQLWCHAR *w = to_wide(cursor);
			SQLRETURN rc = SQLExecDirectW(st, w, SQL_NTS);
			free(w);
			print_results(st, rc);
		}
		SQLFreeHandle(SQL_HANDLE_STMT, st);
		cursor = next;
	}
	printf("END\n");
	fflush(stdout);
	if (dbc) { SQLDisconnect(dbc); SQLFreeHandle(SQL_HANDLE_DBC, dbc); }
	SQLFreeHandle(SQL_HANDLE_ENV, env);
	free(batches);
	return 0;
}
