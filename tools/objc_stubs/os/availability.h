// Stub (see README.md): API_AVAILABLE / API_DEPRECATED for the macos platform
// only, expanding to clang's availability attribute as Apple's do.
#pragma once

#define MPS_OPS_STUB_AVAIL_macos(since) macos, introduced = since
#define MPS_OPS_STUB_DEPR_macos(since, until) macos, introduced = since, deprecated = until

#define API_AVAILABLE(platform) __attribute__((availability(MPS_OPS_STUB_AVAIL_##platform)))
#define API_DEPRECATED(text, platform) \
  __attribute__((availability(MPS_OPS_STUB_DEPR_##platform, message = text)))
