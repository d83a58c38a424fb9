// Stub (see README.md): the Foundation subset mps_ops and PyTorch's MPS
// headers use.
#pragma once

#include <Availability.h>
#include <os/availability.h>
#include <objc/objc.h>
#include <objc/NSObject.h>
#include <dispatch/dispatch.h>

#include <stddef.h>
#include <stdint.h>

#pragma clang assume_nonnull begin

typedef long NSInteger;
typedef unsigned long NSUInteger;

#define NS_ENUM(type, name) enum name : type name; enum name : type
#define NS_OPTIONS(type, name) enum name : type name; enum name : type
#define NS_RETURNS_INNER_POINTER __attribute__((objc_returns_inner_pointer))

typedef NSUInteger NSStringEncoding;
#define NSUTF8StringEncoding ((NSStringEncoding)4)

@protocol NSCopying
- (id)copyWithZone:(void*)zone;
@end

@interface NSString : NSObject <NSCopying>
+ (nullable instancetype)stringWithUTF8String:(const char*)nullTerminatedCString;
- (nullable instancetype)initWithBytes:(const void*)bytes
                                length:(NSUInteger)len
                              encoding:(NSStringEncoding)encoding;
@property(nullable, readonly) const char* UTF8String NS_RETURNS_INNER_POINTER;
@property(readonly) NSUInteger length;
@end

@interface NSArray<__covariant ObjectType> : NSObject <NSCopying>
@property(readonly) NSUInteger count;
- (ObjectType)objectAtIndex:(NSUInteger)index;
- (ObjectType)objectAtIndexedSubscript:(NSUInteger)idx;
@end

@interface NSDictionary<__covariant KeyType, __covariant ObjectType> : NSObject <NSCopying>
@property(readonly) NSUInteger count;
- (nullable ObjectType)objectForKey:(KeyType)aKey;
@end

@interface NSNumber : NSObject <NSCopying>
@end

typedef NSString* NSErrorDomain;

@interface NSError : NSObject <NSCopying>
@property(readonly, copy) NSErrorDomain domain;
@property(readonly) NSInteger code;
@property(readonly, copy) NSString* localizedDescription;
@end

typedef NSString* NSExceptionName;

@interface NSException : NSObject <NSCopying>
@property(readonly, copy) NSExceptionName name;
@property(nullable, readonly, copy) NSString* reason;
@end

#pragma clang assume_nonnull end
