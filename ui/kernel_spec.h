#pragma once
// A kernel written on one line, as the bottleneck view and `export-chart` take it:
//   OP:DTYPE:DIM=V,DIM=V,...   e.g. gemm:bf16:M=4096,N=4096,K=4096
#include <QString>

#include "model/kernel.h"

namespace perfloom::ui {

// Throws std::invalid_argument naming the part that is wrong.
KernelDesc parse_kernel_spec(const QString& spec);
QString kernel_spec_string(const KernelDesc& k);
// A shape line with typical sizes for an op ("M=4096,N=4096,K=4096").
QString default_shape_text(Op op);

}  // namespace perfloom::ui
