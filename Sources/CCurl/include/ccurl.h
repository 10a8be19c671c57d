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

#endif
