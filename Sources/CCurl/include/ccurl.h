// C shim over libcurl: typed wrappers for the variadic curl_easy_setopt / curl_easy_getinfo.
// Only DriveClient imports this module.
#ifndef DRIVEFS_CCURL_H
#define DRIVEFS_CCURL_H
#include <curl/curl.h>

CURLcode ccurl_setopt_long(CURL *h, CURLoption opt, long v);
CURLcode ccurl_setopt_off(CURL *h, CURLoption opt, curl_off_t v);
CURLcode ccurl_setopt_ptr(CURL *h, CURLoption opt, const void *v);
CURLcode ccurl_setopt_string(CURL *h, CURLoption opt, const char *v);
CURLcode ccurl_setopt_write(CURL *h, size_t (*cb)(char *, size_t, size_t, void *));
CURLcode ccurl_setopt_read(CURL *h, size_t (*cb)(char *, size_t, size_t, void *));
CURLcode ccurl_setopt_header(CURL *h, size_t (*cb)(char *, size_t, size_t, void *));
CURLcode ccurl_setopt_xferinfo(CURL *h, int (*cb)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t));
CURLcode ccurl_getinfo_long(CURL *h, CURLINFO info, long *v);
CURLcode ccurl_getinfo_off(CURL *h, CURLINFO info, curl_off_t *v);


// Added for CurlTransport: one-time global init, macro constants Swift cannot see.
/// CURLOPT_SEEKFUNCTION (libcurl rewinds a request body to resend it on a fresh connection).
CURLcode ccurl_setopt_seek(CURL *h, int (*cb)(void *, curl_off_t, int));
/// curl_global_init(CURL_GLOBAL_DEFAULT) exactly once per process (pthread_once); returns its result.
CURLcode ccurl_global_init_once(void);
/// CURL_READFUNC_ABORT: returned by a read callback to abort the transfer.
size_t ccurl_readfunc_abort(void);
/// CURL_WRITEFUNC_ERROR-equivalent: a write callback return that aborts the transfer (0 on any libcurl).
size_t ccurl_writefunc_abort(void);
/// libcurl's version string (for diagnostics and the User-Agent).
const char *ccurl_version(void);

#endif
