// Stub (see README.md): the Objective-C runtime basics. id, Class and SEL are
// built into clang; BOOL is bool on Apple silicon (arm64).
#pragma once

typedef bool BOOL;
#define YES true
#define NO false

#ifndef nil
#define nil nullptr
#endif
#ifndef Nil
#define Nil nullptr
#endif
