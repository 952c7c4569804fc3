// Malloc hooks for the volume runs of Fuzz/run.sh (built with -sanitize=fuzzer and no ASan).
//
// libFuzzer enforces -malloc_limit_mb through __sanitizer_install_malloc_and_free_hooks, whose
// hooks only a sanitizer's allocator runs; without ASan the limit would silently do nothing, and
// a decoder reserving memory by a declared length (never touched, so under -rss_limit_mb) would
// go unnoticed. The harnesses are linked with --wrap=__sanitizer_install_malloc_and_free_hooks,
// so libFuzzer installs its hook here, and this file wraps glibc's allocation functions so that
// every allocation is reported to it: one indirect call per allocation.
// Linked into the volume harness executables only (never into the library or the tests).
#include <stddef.h>
#include <errno.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

typedef void (*malloc_hook_t)(const volatile void *pointer, size_t size);
typedef void (*free_hook_t)(const volatile void *pointer);
static malloc_hook_t malloc_hook;

int __wrap___sanitizer_install_malloc_and_free_hooks(malloc_hook_t on_malloc, free_hook_t on_free) {
    (void)on_free;  // libFuzzer only counts frees (for -trace_malloc); the limit needs none
    malloc_hook = on_malloc;
    return 1;
}

static void *reported(void *pointer, size_t size) {
    malloc_hook_t hook = malloc_hook;
    if (hook) hook(pointer, size);
    return pointer;
}

void *malloc(size_t size) { return reported(__libc_malloc(size), size); }

void *calloc(size_t count, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(count, size, &total)) total = (size_t)-1;
    return reported(__libc_calloc(count, size), total);
}

void *realloc(void *pointer, size_t size) { return reported(__libc_realloc(pointer, size), size); }

void *memalign(size_t alignment, size_t size) { return reported(__libc_memalign(alignment, size), size); }

void *aligned_alloc(size_t alignment, size_t size) { return memalign(alignment, size); }

int posix_memalign(void **result, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    void *pointer = memalign(alignment, size);
    if (!pointer && size) return ENOMEM;
    *result = pointer;
    return 0;
}
