// SPDX-License-Identifier: Apache-2.0
// NVTX injection: a program's NVTX ranges and marks (nvtxRangePush, torch.cuda.nvtx.range_push,
// domains, registered strings) become phases. NVTX loads the library named by
// NVTX_INJECTION64_PATH (`gpumemtrace run` points it here) and calls InitializeInjectionNvtx2,
// which fills NVTX's callback tables with the functions below.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <cstdint>
#include <string>

#include "interpose/export.h"
#include "interpose/runtime.h"

namespace {

using gmt::interpose::PhaseRecorder;
using gmt::interpose::Runtime;

PhaseRecorder& phases() {
  return Runtime::get().phases();
}

// Registered strings and domains are handed out as their name ids: no table to look them up in.
uint32_t id_of(const void* handle) {
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(handle));
}
void* handle_of(uint32_t id) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(id));
}

std::string utf8(const wchar_t* text) {
  std::string out;
  for (; text != nullptr && *text != 0; ++text) {
    const uint32_t c = static_cast<uint32_t>(*text);
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

uint32_t name_of(const char* text) {
  return phases().name_id(text != nullptr ? text : "");
}
uint32_t name_of(const wchar_t* text) {
  return phases().name_id(utf8(text));
}
// An event's message, whichever way it is given; unnamed events get "(unnamed)".
uint32_t name_of(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return name_of("(unnamed)");
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return name_of(a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE:
      return name_of(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return id_of(a->message.registered);
    default:
      return name_of("(unnamed)");
  }
}

// Core (default domain).
void mark_ex(const nvtxEventAttributes_t* a) {
  phases().mark(0, name_of(a));
}
void mark_a(const char* m) {
  phases().mark(0, name_of(m));
}
void mark_w(const wchar_t* m) {
  phases().mark(0, name_of(m));
}
nvtxRangeId_t start_ex(const nvtxEventAttributes_t* a) {
  return phases().start(0, name_of(a));
}
nvtxRangeId_t start_a(const char* m) {
  return phases().start(0, name_of(m));
}
nvtxRangeId_t start_w(const wchar_t* m) {
  return phases().start(0, name_of(m));
}
void end(nvtxRangeId_t id) {
  phases().end(id);
}
int push_ex(const nvtxEventAttributes_t* a) {
  return phases().push(0, name_of(a));
}
int push_a(const char* m) {
  return phases().push(0, name_of(m));
}
int push_w(const wchar_t* m) {
  return phases().push(0, name_of(m));
}
int pop() {
  return phases().pop(0);
}

// Core 2 (domains).
void domain_mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  phases().mark(id_of(d), name_of(a));
}
nvtxRangeId_t domain_start(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return phases().start(id_of(d), name_of(a));
}
void domain_end(nvtxDomainHandle_t, nvtxRangeId_t id) {
  phases().end(id);
}
int domain_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return phases().push(id_of(d), name_of(a));
}
int domain_pop(nvtxDomainHandle_t d) {
  return phases().pop(id_of(d));
}
nvtxStringHandle_t register_a(nvtxDomainHandle_t, const char* s) {
  return static_cast<nvtxStringHandle_t>(handle_of(name_of(s)));
}
nvtxStringHandle_t register_w(nvtxDomainHandle_t, const wchar_t* s) {
  return static_cast<nvtxStringHandle_t>(handle_of(name_of(s)));
}
nvtxDomainHandle_t domain_create_a(const char* name) {
  return static_cast<nvtxDomainHandle_t>(handle_of(name_of(name)));
}
nvtxDomainHandle_t domain_create_w(const wchar_t* name) {
  return static_cast<nvtxDomainHandle_t>(handle_of(name_of(name)));
}
void domain_destroy(nvtxDomainHandle_t) {}

template <class Fn>
void install(NvtxFunctionTable table, unsigned int size, unsigned int slot, Fn fn) {
  if (slot < size && table[slot] != nullptr) {
    *table[slot] = reinterpret_cast<NvtxFunctionPointer>(fn);
  }
}

bool install_core(const NvtxExportTableCallbacks* callbacks) {
  NvtxFunctionTable t = nullptr;
  unsigned int n = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) || t == nullptr) {
    return false;
  }
  install(t, n, NVTX_CBID_CORE_MarkEx, &mark_ex);
  install(t, n, NVTX_CBID_CORE_MarkA, &mark_a);
  install(t, n, NVTX_CBID_CORE_MarkW, &mark_w);
  install(t, n, NVTX_CBID_CORE_RangeStartEx, &start_ex);
  install(t, n, NVTX_CBID_CORE_RangeStartA, &start_a);
  install(t, n, NVTX_CBID_CORE_RangeStartW, &start_w);
  install(t, n, NVTX_CBID_CORE_RangeEnd, &end);
  install(t, n, NVTX_CBID_CORE_RangePushEx, &push_ex);
  install(t, n, NVTX_CBID_CORE_RangePushA, &push_a);
  install(t, n, NVTX_CBID_CORE_RangePushW, &push_w);
  install(t, n, NVTX_CBID_CORE_RangePop, &pop);
  return true;
}

void install_core2(const NvtxExportTableCallbacks* callbacks) {
  NvtxFunctionTable t = nullptr;
  unsigned int n = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n) || t == nullptr) return;
  install(t, n, NVTX_CBID_CORE2_DomainMarkEx, &domain_mark);
  install(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, &domain_start);
  install(t, n, NVTX_CBID_CORE2_DomainRangeEnd, &domain_end);
  install(t, n, NVTX_CBID_CORE2_DomainRangePushEx, &domain_push);
  install(t, n, NVTX_CBID_CORE2_DomainRangePop, &domain_pop);
  install(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, &register_a);
  install(t, n, NVTX_CBID_CORE2_DomainRegisterStringW, &register_w);
  install(t, n, NVTX_CBID_CORE2_DomainCreateA, &domain_create_a);
  install(t, n, NVTX_CBID_CORE2_DomainCreateW, &domain_create_w);
  install(t, n, NVTX_CBID_CORE2_DomainDestroy, &domain_destroy);
}

}  // namespace

extern "C" GMT_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  if (get_export_table == nullptr) return 0;
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return 0;
  if (!install_core(callbacks)) return 0;
  install_core2(callbacks);
  return 1;
}
