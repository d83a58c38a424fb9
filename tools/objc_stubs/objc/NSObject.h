// Stub (see README.md): the NSObject protocol and root class, with the
// manual retain/release methods.
#pragma once

#include <objc/objc.h>

@class NSString;

@protocol NSObject
- (BOOL)isEqual:(id)object;
@property(readonly) unsigned long hash;
- (instancetype)retain;
- (oneway void)release;
- (instancetype)autorelease;
- (unsigned long)retainCount;
@property(readonly, copy) NSString* description;
@end

@interface NSObject <NSObject>
+ (instancetype)alloc;
+ (instancetype)new;
- (instancetype)init;
- (void)dealloc;
@end
