//===- registry.h - how kernel files add their kernels ---------*- C++ -*-===//
#ifndef TESSEL_RUNTIME_CPU_REGISTRY_H
#define TESSEL_RUNTIME_CPU_REGISTRY_H

#include "tessel/cpu_kernels.h"

#include <map>
#include <string>

namespace tessel::cpu {

using KernelTable = std::map<std::string, Kernel>;

// One per kernel file; kernels.cpp calls each once to build the table.
void addElementwiseKernels(KernelTable &table);   // elementwise.cpp
void addConvKernels(KernelTable &table);          // conv.cpp: conv, conv_transpose
void addGemmKernels(KernelTable &table);          // gemm.cpp: gemm, matmul
void addNormalizationKernels(KernelTable &table); // normalization.cpp: *_norm, lrn
void addPoolKernels(KernelTable &table);          // pool.cpp: max_pool, avg_pool
void addReductionKernels(KernelTable &table);     // reduction.cpp: reduce_*, softmax, arg*
void addMovementKernels(KernelTable &table);      // movement.cpp: reshape, cast, slice, ...
void addGatherKernels(KernelTable &table);        // gather.cpp: gather, gather_elements, gather_nd, scatter_nd
void addAttentionKernels(KernelTable &table);     // attention.cpp: attention
void addResizeKernels(KernelTable &table);        // resize.cpp: resize
void addDetectionKernels(KernelTable &table);     // detection.cpp: non_max_suppression

} // namespace tessel::cpu

#endif // TESSEL_RUNTIME_CPU_REGISTRY_H
