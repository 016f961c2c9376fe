// SPDX-License-Identifier: Apache-2.0
// Symbol visibility for the fake CUDA libraries.
//
// Every fake library is compiled with -fvisibility=hidden and linked with -Bsymbolic, so calls
// between the fake's own functions never go through the PLT: an LD_PRELOAD interposer must see
// the application's calls only, exactly as with the real libraries. Only the public API carries
// FAKECUDA_EXPORT (or is declared inside a "visibility push(default)" region).
#pragma once

#define FAKECUDA_EXPORT __attribute__((visibility("default")))
