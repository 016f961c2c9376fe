// SPDX-License-Identifier: Apache-2.0
#pragma once

// The library is built with hidden visibility; only what is marked here is visible to the
// programs it is preloaded into.
#define GMT_EXPORT __attribute__((visibility("default")))
