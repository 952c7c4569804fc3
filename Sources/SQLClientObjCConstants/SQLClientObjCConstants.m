// Definitions of the constants SQLClientObjCConstants.h declares. Objective-C on Apple platforms
// only: elsewhere this file compiles to nothing (the Swift module SQLClientObjC has the same
// names as Swift constants). The strings must equal SQLClientObjC's (SQLClientNotifications.swift);
// SQLClientObjCTests checks both against the list in this file's comment below.
//
// SQLClientMessageNotification SQLClientErrorNotification SQLClientMessageKey SQLClientCodeKey
// SQLClientSeverityKey SQLClientErrorKey
#if defined(__OBJC__) && defined(__APPLE__)
#import "SQLClientObjCConstants.h"

NSString * const SQLClientMessageNotification = @"SQLClientMessageNotification";
NSString * const SQLClientErrorNotification = @"SQLClientErrorNotification";
NSString * const SQLClientMessageKey = @"SQLClientMessageKey";
NSString * const SQLClientCodeKey = @"SQLClientCodeKey";
NSString * const SQLClientSeverityKey = @"SQLClientSeverityKey";
NSString * const SQLClientErrorKey = @"SQLClientErrorKey";
#endif
