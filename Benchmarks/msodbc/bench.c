/*
 * bench.c — Microsoft ODBC Driver 18's side of sqlclient-bench.
 *
 * Not part of the SwiftPM build: `sqlclient-bench` compiles it at run time with
 *     cc -O2 -o msodbc-bench bench.c -lodbc -ldl
 * (unixODBC's driver manager, Debian unixodbc-dev; the driver from PyPI, scripts/msodbc.sh).
 *
 * Usage: msodbc-bench DRIVER HOST:PORT SQL PACKETSIZE [keep]
 *   DRIVER      path of libmsodbcsql-18.*.so (no odbcinst.ini needed)
 *   PACKETSIZE  the packet size asked for (SQL_ATTR_PACKET_SIZE), 0 = the driver's default
 *   keep        every value is kept until the result is read (each copied into memory of its
 *               own, as an application filling a table does): the peer of SQLClient's
 *               `execute()`, which keeps every row; without it each value is dropped once folded
 *
 * Connects with Encrypt=no, runs SQL with SQLExecDirect and fetches row at a time with SQLFetch
 * (rowset size 1: the driver's default result set; a larger rowset makes it open a server
 * cursor, which the replay server does not serve). Each column is bound once per result set with
 * SQLBindCol to its native C type (SQL_C_SBIGINT/SLONG/SSHORT/UTINYINT, SQL_C_BIT, SQL_C_DOUBLE,
 * SQL_C_FLOAT, decimal and money as SQL_C_CHAR text, SQL_C_TYPE_TIMESTAMP / SQL_C_TYPE_DATE,
 * SQL_C_GUID, SQL_C_WCHAR for character types, SQL_C_BINARY); a long value (max types) is read
 * with SQLGetData into a fresh buffer.
 *
 * Every value is folded into the same checksum as sqlclient-bench's Swift side and
 * ../freetds/bench.c (strings by their UTF-8 bytes, computed here from the UTF-16 the driver
 * copies out), and one JSON line is printed:
 *   {"rows":N,"seconds":S,"checksum":"HEX","allocations":A,"maxrss_kb":K,"packet_size":P}
 * `seconds` runs from SQLExecDirect to the end of the last result; `allocations` counts heap
 * allocations over the same span when the bench's malloc counter is preloaded (-1 otherwise).
 */
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
#include <sql.h>
#include <sqlext.h>

#define NULL_DIGEST 0x9E3779B97F4A7C15ULL
#define MIX 1099511628211ULL

enum kind { K_INT, K_TINY, K_BIT, K_FLT8, K_REAL, K_DECIMAL, K_DATETIME, K_DATE, K_DATETIME2, K_GUID,
	    K_STRING, K_BINARY, K_BIG_STRING, K_BIG_BINARY, K_VECTOR };

/* SQL Server 2025's vector as Microsoft ODBC Driver 18.6 describes it (SQLDescribeCol's type). */
#define SQL_SS_VECTOR_TYPE (-156)

struct column {
	enum kind kind;
	SQLLEN size;
	void *buffer;
	SQLLEN ind;
};

static unsigned long long (*malloc_count)(void);

/* `keep`: every value read, kept until the timing ends (then freed). */
static int keeping;
static void **kept;
static size_t kept_count, kept_capacity;

static void keep(void *p)
{
	if (kept_count == kept_capacity) {
		kept_capacity = kept_capacity ? kept_capacity * 2 : 1024;
		kept = realloc(kept, kept_capacity * sizeof *kept);
		if (!kept) { fprintf(stderr, "msodbc-bench: out of memory\n"); exit(1); }
	}
	kept[kept_count++] = p;
}

/* A copy of a bound column's value, kept (`keep`). */
static void keep_copy(const struct column *col)
{
	if (col->ind == SQL_NULL_DATA || !col->buffer) return;
	size_t n = col->ind >= 0 && col->ind <= col->size ? (size_t) col->ind : (size_t) col->size;
	void *p = malloc(n ? n : 1);
	if (!p) { fprintf(stderr, "msodbc-bench: out of memory\n"); exit(1); }
	memcpy(p, col->buffer, n);
	keep(p);
}

static void fail(const char *what, SQLSMALLINT type, SQLHANDLE h)
{
	SQLCHAR state[8], text[1024];
	SQLINTEGER native;
	SQLSMALLINT len;
	fprintf(stderr, "msodbc-bench: %s failed\n", what);
	for (SQLSMALLINT i = 1; SQLGetDiagRec(type, h, i, state, &native, text, sizeof text, &len) == SQL_SUCCESS; i++)
		fprintf(stderr, "  %s %d %s\n", state, (int) native, text);
	exit(1);
}

static uint64_t bytes_digest(const unsigned char *p, size_t n, size_t stride)
{
	uint64_t d = n;
	for (size_t i = 0; i < n; i += stride)
		d += p[i];
	return d;
}

/* The digest of UTF-16 text's UTF-8 form (byte count plus the sum of the bytes). */
static uint64_t utf16_digest(const SQLWCHAR *w, size_t n)
{
	uint64_t count = 0, sum = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t c = w[i];
		if (c >= 0xD800 && c <= 0xDBFF && i + 1 < n && w[i + 1] >= 0xDC00 && w[i + 1] <= 0xDFFF) {
			c = 0x10000 + ((c - 0xD800) << 10) + (w[i + 1] - 0xDC00);
			i++;
		}
		if (c < 0x80) { count += 1; sum += c; }
		else if (c < 0x800) { count += 2; sum += (0xC0 | c >> 6) + (0x80 | (c & 63)); }
		else if (c < 0x10000) { count += 3; sum += (0xE0 | c >> 12) + (0x80 | (c >> 6 & 63)) + (0x80 | (c & 63)); }
		else { count += 4; sum += (0xF0 | c >> 18) + (0x80 | (c >> 12 & 63)) + (0x80 | (c >> 6 & 63)) + (0x80 | (c & 63)); }
	}
	return count + sum;
}

/* The decimal's text to its unscaled integer (as ../freetds/bench.c). */
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

/* Days from 1900-01-01 to y-m-d (proleptic Gregorian). */
static int64_t days1900(int y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned) (y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t) doe - 719468 - (-25567);   /* 1970-01-01 is day 25567 after 1900-01-01 */
}

static enum kind kind_of(SQLSMALLINT type, SQLULEN size, SQLSMALLINT digits)
{
	int big = size == 0 || size > 8000;
	switch (type) {
	case SQL_TINYINT: return K_TINY;
	case SQL_SMALLINT: case SQL_INTEGER: case SQL_BIGINT: return K_INT;
	case SQL_BIT: return K_BIT;
	case SQL_FLOAT: case SQL_DOUBLE: return K_FLT8;
	case SQL_REAL: return K_REAL;
	case SQL_DECIMAL: case SQL_NUMERIC: return K_DECIMAL;
	case SQL_TYPE_DATE: return K_DATE;
	case SQL_TYPE_TIMESTAMP: return digits == 3 && size == 23 ? K_DATETIME : K_DATETIME2;
	case SQL_GUID: return K_GUID;
	case SQL_BINARY: case SQL_VARBINARY: case SQL_LONGVARBINARY: return big ? K_BIG_BINARY : K_BINARY;
	case SQL_SS_VECTOR_TYPE: return K_VECTOR;   /* SQL Server 2025 vector (the driver asks for VECTORSUPPORT) */
	default: return big ? K_BIG_STRING : K_STRING;
	}
}

static void bind_column(SQLHSTMT st, SQLUSMALLINT c, struct column *col)
{
	SQLCHAR name[256];
	SQLSMALLINT nlen, type, digits, nullable;
	SQLULEN size;
	if (!SQL_SUCCEEDED(SQLDescribeCol(st, c, name, sizeof name, &nlen, &type, &size, &digits, &nullable)))
		fail("SQLDescribeCol", SQL_HANDLE_STMT, st);
	col->kind = kind_of(type, size, digits);
	SQLSMALLINT ctype;
	switch (col->kind) {
	case K_TINY: ctype = SQL_C_UTINYINT; col->size = 1; break;
	case K_INT: ctype = SQL_C_SBIGINT; col->size = 8; break;
	case K_BIT: ctype = SQL_C_BIT; col->size = 1; break;
	case K_FLT8: ctype = SQL_C_DOUBLE; col->size = 8; break;
	case K_REAL: ctype = SQL_C_FLOAT; col->size = 4; break;
	case K_DECIMAL: ctype = SQL_C_CHAR; col->size = 64; break;   /* text, as the FreeTDS program */
	case K_DATETIME: case K_DATETIME2: ctype = SQL_C_TYPE_TIMESTAMP; col->size = sizeof(SQL_TIMESTAMP_STRUCT); break;
	case K_DATE: ctype = SQL_C_TYPE_DATE; col->size = sizeof(SQL_DATE_STRUCT); break;
	case K_GUID: ctype = SQL_C_GUID; col->size = sizeof(SQLGUID); break;
	case K_STRING: ctype = SQL_C_WCHAR; col->size = (SQLLEN) (size + 1) * 2; break;
	case K_BINARY: ctype = SQL_C_BINARY; col->size = (SQLLEN) size; break;
	case K_VECTOR: ctype = SQL_C_BINARY; col->size = (SQLLEN) size; break;   /* size: 16 + the elements' bytes */
	default: col->buffer = NULL; col->size = 0; return;   /* read with SQLGetData */
	}
	col->buffer = calloc(1, (size_t) col->size + 2);
	if (!col->buffer) { fprintf(stderr, "msodbc-bench: out of memory\n"); exit(1); }
	if (!SQL_SUCCEEDED(SQLBindCol(st, c, ctype, col->buffer, col->size, &col->ind)))
		fail("SQLBindCol", SQL_HANDLE_STMT, st);
}

/* A long value read with SQLGetData into a fresh buffer (NSData-like), then its digest. */
static uint64_t long_digest(SQLHSTMT st, SQLUSMALLINT c, struct column *col)
{
	SQLSMALLINT ctype = col->kind == K_BIG_STRING ? SQL_C_WCHAR : SQL_C_BINARY;
	size_t unit = ctype == SQL_C_WCHAR ? 2 : 1, cap = 1 << 16, used = 0;
	unsigned char *buf = malloc(cap + 2);
	for (;;) {
		SQLLEN ind = 0;
		size_t room = cap - used;
		SQLRETURN rc = SQLGetData(st, c, ctype, buf + used, (SQLLEN) (room + (unit == 2 ? 2 : 0)), &ind);
		if (rc == SQL_NO_DATA) break;
		if (!SQL_SUCCEEDED(rc)) fail("SQLGetData", SQL_HANDLE_STMT, st);
		if (ind == SQL_NULL_DATA) { free(buf); return NULL_DIGEST; }
		if (rc == SQL_SUCCESS_WITH_INFO && (ind == SQL_NO_TOTAL || (size_t) ind > room)) {
			used += room - room % unit;
			cap = ind == SQL_NO_TOTAL ? cap * 2 : used + ((size_t) ind - (room - room % unit)) + 16;
			buf = realloc(buf, cap + 2);
			continue;
		}
		used += (size_t) ind;
		break;
	}
	uint64_t d = unit == 2 ? utf16_digest((const SQLWCHAR *) buf, used / 2) : bytes_digest(buf, used, 997);
	if (keeping) keep(buf); else free(buf);
	return d;
}

static uint64_t value_digest(SQLHSTMT st, SQLUSMALLINT c, struct column *col)
{
	if (col->kind == K_BIG_STRING || col->kind == K_BIG_BINARY) return long_digest(st, c, col);
	if (col->ind == SQL_NULL_DATA) return NULL_DIGEST;
	const void *b = col->buffer;
	switch (col->kind) {
	case K_TINY: return *(const unsigned char *) b;
	case K_INT: return (uint64_t) *(const int64_t *) b;
	case K_BIT: return *(const unsigned char *) b ? 1 : 0;
	case K_FLT8: { uint64_t u; memcpy(&u, b, 8); return u; }
	case K_REAL: { float f; memcpy(&f, b, 4); double d = f; uint64_t u; memcpy(&u, &d, 8); return u; }
	case K_DECIMAL: return decimal_digest((const char *) b);
	case K_DATE: {
		const SQL_DATE_STRUCT *d = b;
		return (uint64_t) days1900(d->year, d->month, d->day);
	}
	case K_DATETIME: {
		/* datetime: days since 1900 and 1/300 s ticks (the driver gives milliseconds). */
		const SQL_TIMESTAMP_STRUCT *t = b;
		int64_t seconds = (int64_t) t->hour * 3600 + t->minute * 60 + t->second;
		int64_t ticks = seconds * 300 + ((int64_t) t->fraction * 300 + 500000000) / 1000000000;
		return (uint64_t) (days1900(t->year, t->month, t->day) * 25920000 + ticks);
	}
	case K_DATETIME2: {
		const SQL_TIMESTAMP_STRUCT *t = b;
		int64_t seconds = (int64_t) t->hour * 3600 + t->minute * 60 + t->second;
		return (uint64_t) (days1900(t->year, t->month, t->day) * 864000000000LL + seconds * 10000000 + t->fraction / 100);
	}
	case K_GUID: return bytes_digest(b, 16, 1);
	case K_STRING: return utf16_digest(b, (size_t) col->ind / 2);
	case K_BINARY: return bytes_digest(b, (size_t) col->ind, 997);
	case K_VECTOR: {
		/* sqlclient-bench's Digest.floats: the element count plus every float32 element's bits.
		   Driver 18.6 fills SQL_C_BINARY with a 16-byte struct (UInt32 dimensions, UInt32 element
		   type, a pointer to the elements) followed by the elements themselves. */
		const unsigned char *p = b;
		size_t n = (size_t) col->ind, skip = 0;
		uint32_t dims; memcpy(&dims, p, 4);
		if (n >= 16 && (size_t) dims * 4 + 16 == n) skip = 16;
		uint64_t d = (n - skip) / 4;
		for (size_t i = skip; i + 4 <= n; i += 4) { uint32_t u; memcpy(&u, p + i, 4); d += u; }
		return d;
	}
	default: return 0;
	}
}

int main(int argc, char **argv)
{
	if (argc != 5 && !(argc == 6 && strcmp(argv[5], "keep") == 0)) {
		fprintf(stderr, "usage: %s DRIVER HOST:PORT SQL PACKETSIZE [keep]\n", argv[0]);
		return 2;
	}
	keeping = argc == 6;
	malloc_count = (unsigned long long (*)(void)) dlsym(RTLD_DEFAULT, "bench_malloc_count");
	int packet = atoi(argv[4]);
	char host[256], conn[2048];
	const char *colon = strrchr(argv[2], ':');
	if (!colon || (size_t) (colon - argv[2]) >= sizeof host) { fprintf(stderr, "msodbc-bench: HOST:PORT expected\n"); return 2; }
	memcpy(host, argv[2], (size_t) (colon - argv[2]));
	host[colon - argv[2]] = 0;
	snprintf(conn, sizeof conn, "DRIVER={%s};SERVER=%s,%s;UID=bench;PWD=bench;Encrypt=no;APP=sqlclient-bench",
		 argv[1], host, colon + 1);

	SQLHENV env;
	SQLHDBC dbc;
	SQLHSTMT st;
	SQLAllocHandle(SQL_HANDLE_ENV, SQL_NULL_HANDLE, &env);
	SQLSetEnvAttr(env, SQL_ATTR_ODBC_VERSION, (SQLPOINTER) SQL_OV_ODBC3, 0);
	SQLAllocHandle(SQL_HANDLE_DBC, env, &dbc);
	SQLSetConnectAttr(dbc, SQL_ATTR_LOGIN_TIMEOUT, (SQLPOINTER) 10, 0);
	if (packet > 0) SQLSetConnectAttr(dbc, SQL_ATTR_PACKET_SIZE, (SQLPOINTER) (intptr_t) packet, 0);
	if (!SQL_SUCCEEDED(SQLDriverConnect(dbc, NULL, (SQLCHAR *) conn, SQL_NTS, NULL, 0, NULL, SQL_DRIVER_NOPROMPT)))
		fail("SQLDriverConnect", SQL_HANDLE_DBC, dbc);
	SQLAllocHandle(SQL_HANDLE_STMT, dbc, &st);

	uint64_t checksum = 0;
	long long rows = 0;
	unsigned long long allocs0 = malloc_count ? malloc_count() : 0;
	double t0 = now(), c0 = cpu_now();
	long f0 = faults_now();
	SQLRETURN rc = SQLExecDirect(st, (SQLCHAR *) argv[3], SQL_NTS);
	while (rc != SQL_NO_DATA) {
		if (!SQL_SUCCEEDED(rc)) fail("SQLExecDirect/SQLMoreResults", SQL_HANDLE_STMT, st);
		SQLSMALLINT ncols = 0;
		SQLNumResultCols(st, &ncols);
		if (ncols > 0) {
			struct column *cols = calloc((size_t) ncols, sizeof *cols);
			if (!cols) return 1;
			for (SQLUSMALLINT c = 1; c <= (SQLUSMALLINT) ncols; c++) bind_column(st, c, &cols[c - 1]);
			SQLRETURN f;
			while ((f = SQLFetch(st)) != SQL_NO_DATA) {
				if (!SQL_SUCCEEDED(f)) fail("SQLFetch", SQL_HANDLE_STMT, st);
				rows++;
				for (SQLUSMALLINT c = 1; c <= (SQLUSMALLINT) ncols; c++) {
					checksum = checksum * MIX + value_digest(st, c, &cols[c - 1]);
					if (keeping && cols[c - 1].kind != K_BIG_STRING && cols[c - 1].kind != K_BIG_BINARY) keep_copy(&cols[c - 1]);
				}
			}
			SQLFreeStmt(st, SQL_UNBIND);
			for (int c = 0; c < ncols; c++) free(cols[c].buffer);
			free(cols);
		}
		rc = SQLMoreResults(st);
	}
	double seconds = now() - t0;
	double cpu_seconds = cpu_now() - c0;
	long faults = faults_now() - f0;
	long long allocs = malloc_count ? (long long) (malloc_count() - allocs0) : -1;
	for (size_t i = 0; i < kept_count; i++) free(kept[i]);
	free(kept);
	SQLUINTEGER negotiated = 0;
	SQLGetConnectAttr(dbc, SQL_ATTR_PACKET_SIZE, &negotiated, 0, NULL);
	SQLFreeHandle(SQL_HANDLE_STMT, st);
	SQLDisconnect(dbc);
	SQLFreeHandle(SQL_HANDLE_DBC, dbc);
	SQLFreeHandle(SQL_HANDLE_ENV, env);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("{\"rows\":%lld,\"seconds\":%.6f,\"cpu_seconds\":%.6f,\"page_faults\":%ld,\"checksum\":\"%016" PRIX64 "\",\"allocations\":%lld,\"maxrss_kb\":%ld,\"packet_size\":%u}\n",
	       rows, seconds, cpu_seconds, faults, checksum, allocs, (long) ru.ru_maxrss, (unsigned) negotiated);
	return 0;
}
