// A hand-written subgroup_mma kernel, lowered the way codegen/WmmaGemm.cpp
// lowers its kernels: to NVVM's wmma ops, then to PTX.
// RUN: %tessel_opt %s --pass-pipeline='builtin.module(gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1},reconcile-unrealized-casts))' | FileCheck %s
// RUN: %tessel_opt %s --pass-pipeline='builtin.module(gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1},reconcile-unrealized-casts))' \
// RUN:   | %tessel_opt --nvvm-attach-target='chip=sm_80 features=+ptx70' --gpu-module-to-binary='format=isa' | FileCheck %s --check-prefix=PTX

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // CHECK-LABEL: llvm.func @gemm_32x32x32(
    // CHECK-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
    // CHECK-SAME: nvvm.kernel
    // CHECK: nvvm.wmma.load {{.*}}eltype = #nvvm.mma_type<f16>, frag = #nvvm.mma_frag<a>, k = 16 : i32, layout = #nvvm.mma_layout<row>, m = 16 : i32, n = 16 : i32
    // CHECK: nvvm.wmma.load {{.*}}eltype = #nvvm.mma_type<f16>, frag = #nvvm.mma_frag<b>, k = 16 : i32, layout = #nvvm.mma_layout<row>, m = 16 : i32, n = 16 : i32
    // CHECK: nvvm.wmma.mma {{.*}}eltypeA = #nvvm.mma_type<f16>, eltypeB = #nvvm.mma_type<f32>, k = 16 : i32, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<row>, m = 16 : i32, n = 16 : i32
    // CHECK: nvvm.wmma.store {{.*}}eltype = #nvvm.mma_type<f32>, k = 16 : i32, layout = #nvvm.mma_layout<row>, m = 16 : i32, n = 16 : i32
    // CHECK-NOT: gpu.subgroup_mma
    gpu.func @gemm_32x32x32(%A: memref<32x32xf16>, %B: memref<32x32xf16>, %C: memref<32x32xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c16 = arith.constant 16 : index
      %c32 = arith.constant 32 : index
      %zero = arith.constant 0.0 : f32
      %row = gpu.block_id y
      %col = gpu.block_id x
      %r0 = arith.muli %row, %c16 : index
      %c0c = arith.muli %col, %c16 : index
      %init = gpu.subgroup_mma_constant_matrix %zero : !gpu.mma_matrix<16x16xf32, "COp">
      %acc = scf.for %k = %c0 to %c32 step %c16 iter_args(%sum = %init) -> (!gpu.mma_matrix<16x16xf32, "COp">) {
        %a = gpu.subgroup_mma_load_matrix %A[%r0, %k] {leadDimension = 32 : index} : memref<32x32xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
        %b = gpu.subgroup_mma_load_matrix %B[%k, %c0c] {leadDimension = 32 : index} : memref<32x32xf16> -> !gpu.mma_matrix<16x16xf16, "BOp">
        %d = gpu.subgroup_mma_compute %a, %b, %sum : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
        scf.yield %d : !gpu.mma_matrix<16x16xf32, "COp">
      }
      gpu.subgroup_mma_store_matrix %acc, %C[%r0, %c0c] {leadDimension = 32 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<32x32xf32>
      gpu.return
    }
  }
}

// PTX: gpu.binary @kernels
// PTX-SAME: .target sm_80
// PTX-SAME: wmma.load.a.sync.aligned.row.m16n16k16.f16
// PTX-SAME: wmma.load.b.sync.aligned.row.m16n16k16.f16
// PTX-SAME: wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32
// PTX-SAME: wmma.store.d.sync.aligned.row.m16n16k16.f32
