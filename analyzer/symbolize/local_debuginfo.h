// SPDX-License-Identifier: Apache-2.0
// Finding a module's separate debug info (a -dbgsym / -debuginfo package, or a file named by
// .gnu_debuglink) on this machine only.
//
// elfutils' dwfl_standard_find_debuginfo falls back to debuginfod when nothing is found locally,
// and Debian's libdebuginfod-common sets DEBUGINFOD_URLS for every login shell: a report would
// then download debug info for every system library a stack touches. A report must be fast,
// offline and reproducible, so this callback does the local part of the standard search and
// never reaches debuginfod.
#pragma once

#include <elfutils/libdwfl.h>

namespace gmt::analyzer::symbolize {

// A Dwfl_Callbacks::find_debuginfo: looks in the build-id tree (/usr/lib/debug/.build-id/xx/
// yyyy.debug, and the dwz alternate file), then for the .gnu_debuglink name next to the file,
// in its .debug/ folder and under /usr/lib/debug/<its folder>/. A debuglink candidate is only
// accepted when its build-id equals the module's (a module without build-id gets none: its
// debug file could not be told apart from a stale one). Returns an open fd or -1.
int find_local_debuginfo(Dwfl_Module* module, void** userdata, const char* module_name,
                         Dwarf_Addr base, const char* file_name, const char* debuglink_file,
                         GElf_Word debuglink_crc, char** debuginfo_file_name);

}  // namespace gmt::analyzer::symbolize
