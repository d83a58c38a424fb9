/* check_objc.sh --host-stubs: glibc's header, with uint64_t as macOS has it
 * (`unsigned long long`, where LP64 Linux has `unsigned long`: see
 * stdint-intn.h beside it). */
#ifndef _BITS_STDINT_UINTN_H
#define _BITS_STDINT_UINTN_H 1
#include <bits/types.h>
typedef __uint8_t uint8_t;
typedef __uint16_t uint16_t;
typedef __uint32_t uint32_t;
__extension__ typedef unsigned long long int uint64_t;
#endif
