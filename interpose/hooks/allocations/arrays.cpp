// SPDX-License-Identifier: Apache-2.0
// CUDA arrays (textures, surfaces): the key is the CUarray handle, not a device address.
#include "interpose/hooks/allocations/array_bytes.h"
#include "interpose/hooks/hook.h"
#include "interpose/hooks/wrappers.h"

using gmt::format::Api;
using gmt::format::MemoryKind;
using gmt::interpose::array_bytes;
using gmt::interpose::Hook;

namespace {

template <class Handle>
uint64_t handle_value(Handle* p) {
  return p ? reinterpret_cast<uint64_t>(*p) : 0;
}

template <class Desc>
uint64_t bytes_2d(const Desc* d) {
  return d ? array_bytes(d->Width, d->Height, 0, d->NumChannels, d->Format) : 0;
}

template <class Desc>
uint64_t bytes_3d(const Desc* d) {
  return d ? array_bytes(d->Width, d->Height, d->Depth, d->NumChannels, d->Format) : 0;
}

template <class Fn, class Desc, class Size>
CUresult create_array(Hook& hook, Fn real, Api api, CUarray* handle, const Desc* desc, Size size) {
  const CUresult result = real(handle, desc);
  if (hook.outermost()) {
    hook.allocated(result, MemoryKind::kArray, api, handle_value(handle), size(desc),
                   hook.current());
  }
  return result;
}

}  // namespace

extern "C" {

CUresult gmt_cuArrayCreate_v2(CUarray* handle, const CUDA_ARRAY_DESCRIPTOR* desc) {
  Hook hook;
  return create_array(hook, GMT_REAL(hook, cuArrayCreate_v2), Api::kCuArrayCreate, handle, desc,
                      bytes_2d<CUDA_ARRAY_DESCRIPTOR>);
}

CUresult gmt_cuArrayCreate(CUarray* handle, const CUDA_ARRAY_DESCRIPTOR_v1* desc) {
  Hook hook;
  return create_array(hook, GMT_REAL(hook, cuArrayCreate), Api::kCuArrayCreate, handle, desc,
                      bytes_2d<CUDA_ARRAY_DESCRIPTOR_v1>);
}

CUresult gmt_cuArray3DCreate_v2(CUarray* handle, const CUDA_ARRAY3D_DESCRIPTOR* desc) {
  Hook hook;
  return create_array(hook, GMT_REAL(hook, cuArray3DCreate_v2), Api::kCuArray3DCreate, handle, desc,
                      bytes_3d<CUDA_ARRAY3D_DESCRIPTOR>);
}

CUresult gmt_cuArray3DCreate(CUarray* handle, const CUDA_ARRAY3D_DESCRIPTOR_v1* desc) {
  Hook hook;
  return create_array(hook, GMT_REAL(hook, cuArray3DCreate), Api::kCuArray3DCreate, handle, desc,
                      bytes_3d<CUDA_ARRAY3D_DESCRIPTOR_v1>);
}

CUresult gmt_cuArrayDestroy(CUarray array) {
  Hook hook;
  if (hook.outermost() && array != nullptr) {
    hook.events().freeing(Api::kCuArrayDestroy, reinterpret_cast<uint64_t>(array));
  }
  return GMT_REAL(hook, cuArrayDestroy)(array);
}

CUresult gmt_cuMipmappedArrayCreate(CUmipmappedArray* handle, const CUDA_ARRAY3D_DESCRIPTOR* desc,
                                    unsigned int levels) {
  Hook hook;
  const CUresult result = GMT_REAL(hook, cuMipmappedArrayCreate)(handle, desc, levels);
  if (hook.outermost()) {
    const uint64_t bytes =
        desc ? gmt::interpose::mipmapped_array_bytes(desc->Width, desc->Height, desc->Depth,
                                                     desc->NumChannels, desc->Format, levels)
             : 0;
    hook.allocated(result, MemoryKind::kArray, Api::kCuMipmappedArrayCreate, handle_value(handle),
                   bytes, hook.current());
  }
  return result;
}

CUresult gmt_cuMipmappedArrayDestroy(CUmipmappedArray array) {
  Hook hook;
  if (hook.outermost() && array != nullptr) {
    hook.events().freeing(Api::kCuMipmappedArrayDestroy, reinterpret_cast<uint64_t>(array));
  }
  return GMT_REAL(hook, cuMipmappedArrayDestroy)(array);
}

GMT_EXPORT_WRAPPER(cuArrayCreate_v2)
GMT_EXPORT_WRAPPER(cuArrayCreate)
GMT_EXPORT_WRAPPER(cuArray3DCreate_v2)
GMT_EXPORT_WRAPPER(cuArray3DCreate)
GMT_EXPORT_WRAPPER(cuArrayDestroy)
GMT_EXPORT_WRAPPER(cuMipmappedArrayCreate)
GMT_EXPORT_WRAPPER(cuMipmappedArrayDestroy)
}
