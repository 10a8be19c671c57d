// C shim over libfuse3 (low-level API). Only FuseBridge imports this module.
// FUSE_USE_VERSION must be defined here: a cSettings define is not seen by the Swift importer.
#ifndef DRIVEFS_CFUSE_H
#define DRIVEFS_CFUSE_H
#define FUSE_USE_VERSION 312
#include <fuse3/fuse_lowlevel.h>
#include <stdio.h>

// Swift 6 rejects the C global; hand it out through a function.
FILE *cfuse_stderr(void);

#endif
