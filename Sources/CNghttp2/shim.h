#ifndef PUSHCAMP_CNGHTTP2_SHIM_H
#define PUSHCAMP_CNGHTTP2_SHIM_H
// libnghttp2, the HTTP/2 codec of Pushcamp's APNs client (Debian: libnghttp2-dev; macOS: brew install nghttp2).
#include <nghttp2/nghttp2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// A per-session allocator for nghttp2.
//
// nghttp2 allocates about ten small blocks per request (the header list's copy, the stream, the
// outbound HEADERS and DATA items, the response's header buffers) and frees them when the stream
// closes, all on the connection's event loop. With 100 streams in flight those bursts overflow
// glibc's per-thread cache (7 blocks per size) and every block takes malloc's slow path. This pool
// keeps freed blocks on one free list per power-of-two size class, 32 bytes to 2 KiB, at most
// 128 KiB per class; anything bigger, or beyond that, goes to malloc and free. A session is confined
// to one event loop, so the pool needs no lock. Every block starts with a 16-byte header (its class,
// and its size when it has none), which keeps nghttp2's data 16-byte aligned.
#define PUSHCAMP_POOL_CLASSES 7
#define PUSHCAMP_POOL_SMALLEST 32
#define PUSHCAMP_POOL_KEEP_BYTES (128 * 1024)
#define PUSHCAMP_POOL_HEADER 16

typedef struct pushcamp_nghttp2_pool {
    void *free_list[PUSHCAMP_POOL_CLASSES];
    size_t kept[PUSHCAMP_POOL_CLASSES];
} pushcamp_nghttp2_pool;

static inline size_t pushcamp_pool_class_size(size_t size_class) {
    return (size_t)PUSHCAMP_POOL_SMALLEST << size_class;
}

static inline size_t pushcamp_pool_class(size_t size) {
    size_t size_class = 0;
    while (size_class < PUSHCAMP_POOL_CLASSES && pushcamp_pool_class_size(size_class) < size) size_class++;
    return size_class;
}

static void *pushcamp_pool_malloc(size_t size, void *user_data) {
    pushcamp_nghttp2_pool *pool = (pushcamp_nghttp2_pool *)user_data;
    size_t size_class = pushcamp_pool_class(size);
    size_t *block;
    if (size_class < PUSHCAMP_POOL_CLASSES) {
        block = (size_t *)pool->free_list[size_class];
        if (block) {
            pool->free_list[size_class] = *(void **)block;
            pool->kept[size_class]--;
        } else {
            block = (size_t *)malloc(PUSHCAMP_POOL_HEADER + pushcamp_pool_class_size(size_class));
            if (!block) return NULL;
        }
    } else {
        if (size > SIZE_MAX - PUSHCAMP_POOL_HEADER) return NULL;
        block = (size_t *)malloc(PUSHCAMP_POOL_HEADER + size);
        if (!block) return NULL;
    }
    block[0] = size_class;
    block[1] = size;
    return (char *)block + PUSHCAMP_POOL_HEADER;
}

static void pushcamp_pool_free(void *pointer, void *user_data) {
    if (!pointer) return;
    pushcamp_nghttp2_pool *pool = (pushcamp_nghttp2_pool *)user_data;
    size_t *block = (size_t *)((char *)pointer - PUSHCAMP_POOL_HEADER);
    size_t size_class = block[0];
    if (size_class < PUSHCAMP_POOL_CLASSES
        && pool->kept[size_class] < PUSHCAMP_POOL_KEEP_BYTES / pushcamp_pool_class_size(size_class)) {
        *(void **)block = pool->free_list[size_class];
        pool->free_list[size_class] = block;
        pool->kept[size_class]++;
    } else {
        free(block);
    }
}

static void *pushcamp_pool_calloc(size_t count, size_t size, void *user_data) {
    if (size != 0 && count > SIZE_MAX / size) return NULL;
    void *pointer = pushcamp_pool_malloc(count * size, user_data);
    if (pointer) memset(pointer, 0, count * size);
    return pointer;
}

static void *pushcamp_pool_realloc(void *pointer, size_t size, void *user_data) {
    if (!pointer) return pushcamp_pool_malloc(size, user_data);
    size_t *block = (size_t *)((char *)pointer - PUSHCAMP_POOL_HEADER);
    size_t capacity = block[0] < PUSHCAMP_POOL_CLASSES ? pushcamp_pool_class_size(block[0]) : block[1];
    if (block[0] < PUSHCAMP_POOL_CLASSES && size <= capacity) {
        block[1] = size;
        return pointer;
    }
    void *moved = pushcamp_pool_malloc(size, user_data);
    if (!moved) return NULL;
    memcpy(moved, pointer, capacity < size ? capacity : size);
    pushcamp_pool_free(pointer, user_data);
    return moved;
}

/// A new, empty pool (NULL when out of memory); `pushcamp_nghttp2_pool_delete` after the session.
static inline pushcamp_nghttp2_pool *pushcamp_nghttp2_pool_new(void) {
    return (pushcamp_nghttp2_pool *)calloc(1, sizeof(pushcamp_nghttp2_pool));
}

/// Frees the pool's kept blocks and the pool. Only once its session is deleted: nghttp2 frees what
/// it still holds through the pool while it deletes the session.
static inline void pushcamp_nghttp2_pool_delete(pushcamp_nghttp2_pool *pool) {
    if (!pool) return;
    for (size_t size_class = 0; size_class < PUSHCAMP_POOL_CLASSES; size_class++) {
        void *block = pool->free_list[size_class];
        while (block) {
            void *next = *(void **)block;
            free(block);
            block = next;
        }
    }
    free(pool);
}

/// The allocator to hand `nghttp2_session_client_new3`; nghttp2 copies it.
static inline nghttp2_mem pushcamp_nghttp2_pool_mem(pushcamp_nghttp2_pool *pool) {
    nghttp2_mem mem = {pool, pushcamp_pool_malloc, pushcamp_pool_free, pushcamp_pool_calloc, pushcamp_pool_realloc};
    return mem;
}
#endif
