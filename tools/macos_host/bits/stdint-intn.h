/* check_objc.sh --host-stubs: glibc's header, with int64_t as macOS has it.
 *
 * On macOS int64_t is `long long`; on LP64 Linux it is `long`. Both are 64
 * bits, but they are different types, so `const int64_t* p = &a_long;`
 * compiles on Linux and not on a Mac. This header, found before glibc's,
 * makes the host stubs' check see macOS's type. The rest is glibc's. */
#ifndef _BITS_STDINT_INTN_H
#define _BITS_STDINT_INTN_H 1
#include <bits/types.h>
typedef __int8_t int8_t;
typedef __int16_t int16_t;
typedef __int32_t int32_t;
__extension__ typedef long long int int64_t;
#endif
