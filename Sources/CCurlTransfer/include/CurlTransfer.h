#ifndef CCURLTRANSFER_H
#define CCURLTRANSFER_H

// HTTP transfers through libcurl's multi interface on one thread of their own, for RequestAudit's
// checked data tasks: FoundationNetworking loads every task through the same libcurl, so a transfer
// set up with the options FoundationNetworking's HTTP protocol sets sends the same request, and it
// costs a fraction of a second URLSession load (no per-callback dispatch timer or queue hop).
//
// libcurl is not linked: its functions are looked up in the process, where FoundationNetworking
// has already loaded it (`ccurl_available` is 0 when it has not, or lacks a function).
//
// A transfer is made, configured, started once, and reports its end exactly once through its
// `done` function, on the transfer thread; after that its results can be read and it must be freed.

#include <stddef.h>
#include <stdint.h>

typedef struct ccurl_transfer ccurl_transfer;
typedef void (*ccurl_done)(void *context);

/// The transfer ended because no byte came or went for its idle timeout.
#define CCURL_IDLE_TIMEOUT (-1)
/// The transfer was cancelled before it ended.
#define CCURL_CANCELLED (-2)
/// The transfer could not be set up (libcurl refused an option or memory ran out).
#define CCURL_SETUP_FAILED (-3)

/// 1 when libcurl's functions were found in the process and its multi interface started.
int ccurl_available(void);

/// libcurl's version as major * 10000 + minor * 100 + patch, 0 when unavailable.
int ccurl_version(void);

/// A transfer of `url` with request method `method` (sent as given), its header lines in the form
/// libcurl takes (`Name: value`, `Name;` for an empty value, `Name:` to remove one of libcurl's), one
/// after another in `headers`, each ended by a line feed, and
/// a body: `body_mode` 0 sends none, 1 sends `body_length` bytes copied from `body` (0 bytes is an
/// empty body with `Content-Length: 0`). `is_head` asks for no response body. The transfer fails
/// with CCURL_IDLE_TIMEOUT when nothing moves for `idle_timeout_ms`. NULL when memory ran out.
ccurl_transfer *ccurl_transfer_create(const char *url, const char *method, const char *headers, int body_mode, const void *body, size_t body_length,
                                      int is_head, long idle_timeout_ms);

/// Starts the transfer; `done(context)` is called once, on the transfer thread, when it ends.
void ccurl_transfer_start(ccurl_transfer *transfer, ccurl_done done, void *context);

/// Asks the transfer to stop; it ends with CCURL_CANCELLED unless it ended already. Thread-safe.
void ccurl_transfer_cancel(ccurl_transfer *transfer);

/// How the transfer ended: libcurl's CURLcode (0 for success) or one of the CCURL_ codes above.
int ccurl_transfer_code(const ccurl_transfer *transfer);

/// The `errno` of a failed connection attempt, 0 when none.
long ccurl_transfer_os_errno(const ccurl_transfer *transfer);

/// libcurl's message for a failure, empty when there was none.
const char *ccurl_transfer_error(const ccurl_transfer *transfer);

/// Every response header line received, each as libcurl gave it (with its CR LF), in order.
const char *ccurl_transfer_headers(const ccurl_transfer *transfer, size_t *length);

/// The response body received (decoded when it came compressed).
const uint8_t *ccurl_transfer_body(const ccurl_transfer *transfer, size_t *length);

/// Frees an ended transfer.
void ccurl_transfer_free(ccurl_transfer *transfer);

#endif
