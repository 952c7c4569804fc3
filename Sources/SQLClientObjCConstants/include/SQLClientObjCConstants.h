// The Objective-C SQLClient's global constants, for Objective-C code that migrates to the
// SQLClientObjC module: a Swift module cannot export a global constant to Objective-C, so they
// are declared here and defined in SQLClientObjCConstants.m (Apple platforms only; the strings
// are the ones SQLClientObjC posts and reads). Objective-C code writes
//
//     @import SQLClientObjC;            // the SQLClient class
//     @import SQLClientObjCConstants;   // SQLClientErrorNotification, SQLClientMessageKey, ...
//
// where it had `#import "SQLClient.h"`. Swift code uses SQLClientObjC's constants of the same
// names (these are unavailable in Swift, so a name never means two things).
#ifndef SQLCLIENT_OBJC_CONSTANTS_H
#define SQLCLIENT_OBJC_CONSTANTS_H

#if defined(__OBJC__)
#import <Foundation/Foundation.h>

/// Posted for every server INFO or PRINT message; `userInfo`: SQLClientMessageKey,
/// SQLClientCodeKey, SQLClientSeverityKey.
FOUNDATION_EXPORT NSString * const SQLClientMessageNotification
    NS_SWIFT_UNAVAILABLE("SQLClientObjC's SQLClientMessageNotification");
/// Posted for every server error and client-side failure, before the failing call's completion;
/// `userInfo`: SQLClientMessageKey, SQLClientCodeKey, SQLClientSeverityKey (and SQLClientErrorKey).
FOUNDATION_EXPORT NSString * const SQLClientErrorNotification
    NS_SWIFT_UNAVAILABLE("SQLClientObjC's SQLClientErrorNotification");
/// `userInfo` key: the message text (NSString).
FOUNDATION_EXPORT NSString * const SQLClientMessageKey
    NS_SWIFT_UNAVAILABLE("SQLClientObjC's SQLClientMessageKey");
/// `userInfo` key: the error or message number (NSNumber).
FOUNDATION_EXPORT NSString * const SQLClientCodeKey
    NS_SWIFT_UNAVAILABLE("SQLClientObjC's SQLClientCodeKey");
/// `userInfo` key: the severity (NSNumber).
FOUNDATION_EXPORT NSString * const SQLClientSeverityKey
    NS_SWIFT_UNAVAILABLE("SQLClientObjC's SQLClientSeverityKey");
/// `userInfo` key of SQLClientErrorNotification (new): the NSError behind a client-side failure.
FOUNDATION_EXPORT NSString * const SQLClientErrorKey
    NS_SWIFT_UNAVAILABLE("SQLClientObjC's SQLClientErrorKey");
#endif

#endif
