/*
 * malloc_counter.c — counts heap allocations of a process, for sqlclient-bench.
 *
 * Built by the bench at run time (never by the library build):
 *     cc -O2 -shared -fPIC -o libmalloc_counter.so malloc_counter.c
 * and loaded with LD_PRELOAD into the bench's measuring child processes (SQLClient's and the
 * FreeTDS program). It wraps glibc's allocator entry points and counts every call that can hand
 * out a new block (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign, valloc).
 * The process reads the count through `bench_malloc_count()` (found with dlsym; absent when the
 * library is not preloaded, and then no count is reported).
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <errno.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static unsigned long long allocations;

static inline void counted(void)
{
	__atomic_fetch_add(&allocations, 1, __ATOMIC_RELAXED);
}

unsigned long long bench_malloc_count(void)
{
	return __atomic_load_n(&allocations, __ATOMIC_RELAXED);
}

void *malloc(size_t n)
{
	counted();
	return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
	counted();
	return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	counted();
	return __libc_realloc(p, n);
}

void free(void *p)
{
	__libc_free(p);
}

int posix_memalign(void **out, size_t alignment, size_t n)
{
	counted();
	if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0)
		return EINVAL;
	void *p = __libc_memalign(alignment, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *aligned_alloc(size_t alignment, size_t n)
{
	counted();
	return __libc_memalign(alignment, n);
}

void *memalign(size_t alignment, size_t n)
{
	counted();
	return __libc_memalign(alignment, n);
}

void *valloc(size_t n)
{
	counted();
	return __libc_memalign(4096, n);
}
