// See include/CurlTransfer.h. libcurl's ABI is stable: the option and info numbers below are those
// of curl.h, and the functions are looked up by name in the process.

#define _GNU_SOURCE
#include "CurlTransfer.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void CURL;
typedef void CURLM;
struct curl_slist {
    char *data;
    struct curl_slist *next;
};
typedef struct {
    int msg;
    CURL *easy_handle;
    union {
        void *whatever;
        int result;
    } data;
} CURLMsg;
typedef struct {
    int age;
    const char *version;
    unsigned int version_num;
} curl_version_info_data;

enum {
    OPT_URL = 10002,
    OPT_WRITEDATA = 10001,
    OPT_READDATA = 10009,
    OPT_ERRORBUFFER = 10010,
    OPT_WRITEFUNCTION = 20011,
    OPT_READFUNCTION = 20012,
    OPT_HTTPHEADER = 10023,
    OPT_HEADERDATA = 10029,
    OPT_CUSTOMREQUEST = 10036,
    OPT_HEADER = 42,
    OPT_NOPROGRESS = 43,
    OPT_NOBODY = 44,
    OPT_FAILONERROR = 45,
    OPT_UPLOAD = 46,
    OPT_FOLLOWLOCATION = 52,
    OPT_HEADERFUNCTION = 20079,
    OPT_NOSIGNAL = 99,
    OPT_BUFFERSIZE = 98,
    OPT_ACCEPT_ENCODING = 10102,
    OPT_PRIVATE = 10103,
    OPT_INFILESIZE_LARGE = 30115,
    OPT_HTTP_CONTENT_DECODING = 158,
    OPT_SEEKFUNCTION = 20167,
    OPT_SEEKDATA = 10168,
    OPT_PROTOCOLS = 181,
    OPT_REDIR_PROTOCOLS = 182,
    INFO_OS_ERRNO = 0x200000 + 25,
    INFO_PRIVATE = 0x100000 + 21,
    MOPT_PIPELINING = 3,
    MOPT_MAX_HOST_CONNECTIONS = 7,
    MSG_DONE = 1,
    PROTO_HTTP_HTTPS = 1 | 2,
    ERROR_SIZE = 256,
};

static struct {
    CURL *(*easy_init)(void);
    int (*easy_setopt)(CURL *, int, ...);
    int (*easy_getinfo)(CURL *, int, ...);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(int);
    CURLM *(*multi_init)(void);
    int (*multi_setopt)(CURLM *, int, ...);
    int (*multi_add_handle)(CURLM *, CURL *);
    int (*multi_remove_handle)(CURLM *, CURL *);
    int (*multi_perform)(CURLM *, int *);
    int (*multi_poll)(CURLM *, void *, unsigned int, int, int *);
    int (*multi_wakeup)(CURLM *);
    CURLMsg *(*multi_info_read)(CURLM *, int *);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    curl_version_info_data *(*version_info)(int);
} curl;

struct ccurl_transfer {
    CURL *easy;
    struct curl_slist *headers;
    char *method;
    uint8_t *request_body;
    size_t request_length, request_position;
    long idle_timeout_ms;
    int64_t last_activity_ms;
    atomic_int cancelled;
    int code;
    long os_errno;
    char error[ERROR_SIZE];
    char *head;
    size_t head_length, head_capacity;
    uint8_t *body;
    size_t body_length, body_capacity;
    ccurl_done done;
    void *context;
    struct ccurl_transfer *next;
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int available;
static CURLM *multi;
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static ccurl_transfer *pending;

static int64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void *run(void *unused);

static int find_functions(void) {
#define FIND(field, name)                                                                                   \
    if (!(*(void **)&curl.field = dlsym(RTLD_DEFAULT, name))) return 0;
    FIND(easy_init, "curl_easy_init")
    FIND(easy_setopt, "curl_easy_setopt")
    FIND(easy_getinfo, "curl_easy_getinfo")
    FIND(easy_cleanup, "curl_easy_cleanup")
    FIND(easy_strerror, "curl_easy_strerror")
    FIND(multi_init, "curl_multi_init")
    FIND(multi_setopt, "curl_multi_setopt")
    FIND(multi_add_handle, "curl_multi_add_handle")
    FIND(multi_remove_handle, "curl_multi_remove_handle")
    FIND(multi_perform, "curl_multi_perform")
    FIND(multi_poll, "curl_multi_poll")
    FIND(multi_wakeup, "curl_multi_wakeup")
    FIND(multi_info_read, "curl_multi_info_read")
    FIND(slist_append, "curl_slist_append")
    FIND(slist_free_all, "curl_slist_free_all")
    FIND(version_info, "curl_version_info")
#undef FIND
    return 1;
}

static void start_engine(void) {
    if (!find_functions()) return;
    multi = curl.multi_init();
    if (!multi) return;
    // FoundationNetworking's defaults: six connections a host, HTTP/2 multiplexing where offered.
    curl.multi_setopt(multi, MOPT_MAX_HOST_CONNECTIONS, 6L);
    curl.multi_setopt(multi, MOPT_PIPELINING, 2L);
    pthread_t thread;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    available = pthread_create(&thread, &attributes, run, NULL) == 0;
    pthread_attr_destroy(&attributes);
}

int ccurl_available(void) {
    pthread_once(&once, start_engine);
    return available;
}

int ccurl_version(void) {
    if (!ccurl_available()) return 0;
    curl_version_info_data *info = curl.version_info(0);
    unsigned int n = info ? info->version_num : 0;
    return (int)(((n >> 16) & 0xff) * 10000 + ((n >> 8) & 0xff) * 100 + (n & 0xff));
}

static int append(void *buffer, size_t *length, size_t *capacity, const void *bytes, size_t count) {
    uint8_t **data = buffer;
    if (*length + count > *capacity) {
        size_t wanted = *capacity ? *capacity : 4096;
        while (wanted < *length + count) wanted *= 2;
        uint8_t *grown = realloc(*data, wanted);
        if (!grown) return 0;
        *data = grown;
        *capacity = wanted;
    }
    memcpy(*data + *length, bytes, count);
    *length += count;
    return 1;
}

static size_t on_header(char *bytes, size_t size, size_t count, void *user) {
    ccurl_transfer *t = user;
    t->last_activity_ms = now_ms();
    return append(&t->head, &t->head_length, &t->head_capacity, bytes, size * count) ? size * count : 0;
}

static size_t on_body(char *bytes, size_t size, size_t count, void *user) {
    ccurl_transfer *t = user;
    t->last_activity_ms = now_ms();
    return append(&t->body, &t->body_length, &t->body_capacity, bytes, size * count) ? size * count : 0;
}

static size_t on_read(char *buffer, size_t size, size_t count, void *user) {
    ccurl_transfer *t = user;
    t->last_activity_ms = now_ms();
    size_t left = t->request_length - t->request_position;
    size_t n = size * count < left ? size * count : left;
    memcpy(buffer, t->request_body + t->request_position, n);
    t->request_position += n;
    return n;
}

static int on_seek(void *user, int64_t offset, int origin) {
    ccurl_transfer *t = user;
    if (origin != SEEK_SET || offset < 0 || (uint64_t)offset > t->request_length) return 2; // CURL_SEEKFUNC_CANTSEEK
    t->request_position = (size_t)offset;
    return 0;
}

ccurl_transfer *ccurl_transfer_create(const char *url, const char *method, const char *headers, int body_mode, const void *body, size_t body_length,
                                      int is_head, long idle_timeout_ms) {
    if (!ccurl_available()) return NULL;
    ccurl_transfer *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->easy = curl.easy_init();
    t->method = strdup(method);
    if (!t->easy || !t->method) goto fail;
    for (const char *line = headers; *line;) {
        const char *end = strchr(line, '\n');
        size_t length = end ? (size_t)(end - line) : strlen(line);
        char *copy = strndup(line, length);
        if (!copy) goto fail;
        struct curl_slist *list = curl.slist_append(t->headers, copy);
        free(copy);
        if (!list) goto fail;
        t->headers = list;
        line += length + (end ? 1 : 0);
    }
    if (body_mode == 1 && body_length > 0) {
        t->request_body = malloc(body_length);
        if (!t->request_body) goto fail;
        memcpy(t->request_body, body, body_length);
    }
    t->request_length = body_length;
    t->idle_timeout_ms = idle_timeout_ms;
    CURL *e = t->easy;
    int failed = 0;
    // The options FoundationNetworking 6.3's HTTP protocol sets (HTTPURLProtocol.configureEasyHandle).
    failed |= curl.easy_setopt(e, OPT_HEADER, 0L);
    failed |= curl.easy_setopt(e, OPT_NOPROGRESS, 1L);
    failed |= curl.easy_setopt(e, OPT_NOSIGNAL, 1L);
    failed |= curl.easy_setopt(e, OPT_ERRORBUFFER, t->error);
    failed |= curl.easy_setopt(e, OPT_FAILONERROR, 0L);
    failed |= curl.easy_setopt(e, OPT_URL, url);
    failed |= curl.easy_setopt(e, OPT_PROTOCOLS, (long)PROTO_HTTP_HTTPS);
    failed |= curl.easy_setopt(e, OPT_REDIR_PROTOCOLS, (long)PROTO_HTTP_HTTPS);
    failed |= curl.easy_setopt(e, OPT_UPLOAD, body_mode == 1 ? 1L : 0L);
    failed |= curl.easy_setopt(e, OPT_INFILESIZE_LARGE, (int64_t)(body_mode == 1 ? body_length : 0));
    failed |= curl.easy_setopt(e, OPT_FOLLOWLOCATION, 0L);
    failed |= curl.easy_setopt(e, OPT_HTTPHEADER, t->headers);
    failed |= curl.easy_setopt(e, OPT_ACCEPT_ENCODING, "");
    failed |= curl.easy_setopt(e, OPT_HTTP_CONTENT_DECODING, 1L);
    failed |= curl.easy_setopt(e, OPT_BUFFERSIZE, 16384L); // CURL_MAX_WRITE_SIZE
    failed |= curl.easy_setopt(e, OPT_CUSTOMREQUEST, t->method);
    failed |= curl.easy_setopt(e, OPT_NOBODY, is_head ? 1L : 0L);
    failed |= curl.easy_setopt(e, OPT_HEADERFUNCTION, on_header);
    failed |= curl.easy_setopt(e, OPT_HEADERDATA, t);
    failed |= curl.easy_setopt(e, OPT_WRITEFUNCTION, on_body);
    failed |= curl.easy_setopt(e, OPT_WRITEDATA, t);
    failed |= curl.easy_setopt(e, OPT_READFUNCTION, on_read);
    failed |= curl.easy_setopt(e, OPT_READDATA, t);
    failed |= curl.easy_setopt(e, OPT_SEEKFUNCTION, on_seek);
    failed |= curl.easy_setopt(e, OPT_SEEKDATA, t);
    failed |= curl.easy_setopt(e, OPT_PRIVATE, t);
    if (failed) t->code = CCURL_SETUP_FAILED;
    return t;
fail:
    ccurl_transfer_free(t);
    return NULL;
}

void ccurl_transfer_start(ccurl_transfer *t, ccurl_done done, void *context) {
    t->done = done;
    t->context = context;
    if (t->code == CCURL_SETUP_FAILED) return done(context);
    pthread_mutex_lock(&pending_lock);
    t->next = pending;
    pending = t;
    pthread_mutex_unlock(&pending_lock);
    curl.multi_wakeup(multi);
}

void ccurl_transfer_cancel(ccurl_transfer *t) {
    atomic_store(&t->cancelled, 1);
    curl.multi_wakeup(multi);
}

int ccurl_transfer_code(const ccurl_transfer *t) { return t->code; }
long ccurl_transfer_os_errno(const ccurl_transfer *t) { return t->os_errno; }
const char *ccurl_transfer_error(const ccurl_transfer *t) {
    if (t->error[0] || t->code <= 0) return t->error;
    return curl.easy_strerror(t->code);
}
const char *ccurl_transfer_headers(const ccurl_transfer *t, size_t *length) {
    *length = t->head_length;
    return t->head ? t->head : "";
}
const uint8_t *ccurl_transfer_body(const ccurl_transfer *t, size_t *length) {
    *length = t->body_length;
    return t->body ? t->body : (const uint8_t *)"";
}

void ccurl_transfer_free(ccurl_transfer *t) {
    if (!t) return;
    if (t->easy) curl.easy_cleanup(t->easy);
    if (t->headers) curl.slist_free_all(t->headers);
    free(t->method);
    free(t->request_body);
    free(t->head);
    free(t->body);
    free(t);
}

/// Ends an active transfer: out of the multi handle and the active list, then reported.
static void end(ccurl_transfer **active, ccurl_transfer *t, int code) {
    curl.multi_remove_handle(multi, t->easy);
    for (ccurl_transfer **link = active; *link; link = &(*link)->next) {
        if (*link == t) {
            *link = t->next;
            break;
        }
    }
    t->code = code;
    t->done(t->context);
}

static void *run(void *unused) {
    (void)unused;
    ccurl_transfer *active = NULL;
    for (;;) {
        pthread_mutex_lock(&pending_lock);
        ccurl_transfer *arrived = pending;
        pending = NULL;
        pthread_mutex_unlock(&pending_lock);
        while (arrived) {
            ccurl_transfer *t = arrived;
            arrived = t->next;
            t->last_activity_ms = now_ms();
            if (curl.multi_add_handle(multi, t->easy) != 0) {
                t->code = CCURL_SETUP_FAILED;
                t->done(t->context);
                continue;
            }
            t->next = active;
            active = t;
        }
        int running = 0;
        curl.multi_perform(multi, &running);
        CURLMsg *message;
        int queued;
        while ((message = curl.multi_info_read(multi, &queued))) {
            if (message->msg != MSG_DONE) continue;
            ccurl_transfer *t = NULL;
            curl.easy_getinfo(message->easy_handle, INFO_PRIVATE, (char **)&t);
            int code = message->data.result;
            if (code != 0) curl.easy_getinfo(t->easy, INFO_OS_ERRNO, &t->os_errno);
            end(&active, t, code);
        }
        // Cancelled and idle transfers, and how long the next poll may wait.
        int64_t now = now_ms();
        int64_t wait = 1000;
        for (ccurl_transfer *t = active, *next; t; t = next) {
            next = t->next;
            if (atomic_load(&t->cancelled)) {
                end(&active, t, CCURL_CANCELLED);
                continue;
            }
            int64_t left = t->last_activity_ms + t->idle_timeout_ms - now;
            if (left <= 0) {
                end(&active, t, CCURL_IDLE_TIMEOUT);
                continue;
            }
            if (left < wait) wait = left;
        }
        curl.multi_poll(multi, NULL, 0, (int)wait, NULL);
    }
    return NULL;
}
