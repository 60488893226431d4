#ifndef PUSHCAMP_CNGHTTP2_SHIM_H
#define PUSHCAMP_CNGHTTP2_SHIM_H
// libnghttp2, the HTTP/2 codec of Pushcamp's APNs client (Debian: libnghttp2-dev; macOS: brew install nghttp2).
#include <nghttp2/nghttp2.h>
#endif
