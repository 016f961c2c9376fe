// SPDX-License-Identifier: Apache-2.0
// The C library's own dlsym, found without calling dlsym (we replace it).
#pragma once

namespace gmt::interpose {

using DlsymFn = void* (*)(void*, const char*);

DlsymFn real_dlsym();

}  // namespace gmt::interpose
