// SPDX-License-Identifier: Apache-2.0
// dlsym(handle, name), exported in place of the C library's.
//
// dlsym(RTLD_NEXT, ...) and dlsym(RTLD_DEFAULT, ...) resolve relative to their caller, which
// glibc finds from the return address. Forwarding them from a C++ function would make us the
// caller, so that RTLD_NEXT from library X skips to the library after *us* (the classic
// infinite loop of interposers). For these pseudo-handles we therefore jump to the real dlsym
// with the caller's return address still on the stack. Lookups with a real handle do not
// depend on the caller and go to gmt_dlsym_for_handle, which may wrap driver entry points.
// (A pseudo-handle lookup of a driver symbol finds our exported wrapper anyway: the preload
// comes first in the global scope.)

#if defined(__x86_64__)
        .text
        .globl  dlsym
        .type   dlsym, @function
dlsym:
        .cfi_startproc
        testq   %rdi, %rdi
        je      .Lpseudo_handle
        cmpq    $-1, %rdi
        je      .Lpseudo_handle
        jmp     gmt_dlsym_for_handle
.Lpseudo_handle:
        pushq   %rdi
        .cfi_adjust_cfa_offset 8
        pushq   %rsi
        .cfi_adjust_cfa_offset 8
        subq    $8, %rsp              // keep the stack 16-byte aligned for the call
        .cfi_adjust_cfa_offset 8
        call    gmt_resolve_real_dlsym
        addq    $8, %rsp
        .cfi_adjust_cfa_offset -8
        popq    %rsi
        .cfi_adjust_cfa_offset -8
        popq    %rdi
        .cfi_adjust_cfa_offset -8
        testq   %rax, %rax
        je      .Lno_real_dlsym
        jmp     *%rax
.Lno_real_dlsym:
        ret                           // rax is NULL: the symbol is "not found"
        .cfi_endproc
        .size   dlsym, .-dlsym
#else
#error "the dlsym trampoline is written for x86-64 only; port dlsym_trampoline.S"
#endif
        .section .note.GNU-stack,"",@progbits
