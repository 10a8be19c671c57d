#include "ccurl.h"
#include <pthread.h>

CURLcode ccurl_setopt_long(CURL *h, CURLoption opt, long v) { return curl_easy_setopt(h, opt, v); }
CURLcode ccurl_setopt_off(CURL *h, CURLoption opt, curl_off_t v) { return curl_easy_setopt(h, opt, v); }
CURLcode ccurl_setopt_ptr(CURL *h, CURLoption opt, const void *v) { return curl_easy_setopt(h, opt, v); }
CURLcode ccurl_setopt_string(CURL *h, CURLoption opt, const char *v) { return curl_easy_setopt(h, opt, v); }
CURLcode ccurl_setopt_write(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) { return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, cb); }
CURLcode ccurl_setopt_read(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) { return curl_easy_setopt(h, CURLOPT_READFUNCTION, cb); }
CURLcode ccurl_setopt_header(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) { return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, cb); }
CURLcode ccurl_setopt_xferinfo(CURL *h, int (*cb)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t)) { return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, cb); }
CURLcode ccurl_getinfo_long(CURL *h, CURLINFO info, long *v) { return curl_easy_getinfo(h, info, v); }
CURLcode ccurl_getinfo_off(CURL *h, CURLINFO info, curl_off_t *v) { return curl_easy_getinfo(h, info, v); }

static pthread_once_t ccurl_once = PTHREAD_ONCE_INIT;
static CURLcode ccurl_init_result = CURLE_OK;
static void ccurl_do_init(void) { ccurl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT); }
CURLcode ccurl_global_init_once(void) { pthread_once(&ccurl_once, ccurl_do_init); return ccurl_init_result; }
size_t ccurl_readfunc_abort(void) { return CURL_READFUNC_ABORT; }
size_t ccurl_writefunc_abort(void) { return 0; }
const char *ccurl_version(void) { return curl_version(); }
CURLcode ccurl_setopt_seek(CURL *h, int (*cb)(void *, curl_off_t, int)) { return curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, cb); }
