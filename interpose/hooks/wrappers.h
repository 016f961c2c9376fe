// SPDX-License-Identifier: Apache-2.0
// Our replacement for each driver entry point in GMT_DRIVER_ENTRY_POINTS, declared with the
// type of the function it stands in for (as cuda.h declares it). Hidden: programs reach them
// through exported aliases with the driver's names, or through what dlsym and cuGetProcAddress
// hand out.
#pragma once

#include "interpose/hooks/cuda_api.h"
#include "interpose/hooks/entry_points.h"

#define GMT_DECLARE_WRAPPER(name) \
  extern "C" __attribute__((visibility("hidden"))) decltype(::name) gmt_##name;
GMT_DRIVER_ENTRY_POINTS(GMT_DECLARE_WRAPPER)
#undef GMT_DECLARE_WRAPPER

// For programs linked with -lcuda: the preload comes first, so the driver's names bind to us.
#define GMT_EXPORT_WRAPPER(name)                                          \
  extern "C" __attribute__((visibility("default"))) decltype(::name) name \
      __attribute__((alias("gmt_" #name)));
