#include "ui/kernel_spec.h"

#include <QStringList>
#include <stdexcept>

namespace perfloom::ui {

KernelDesc parse_kernel_spec(const QString& spec) {
  const QStringList parts = spec.trimmed().split(':');
  if (parts.size() != 3)
    throw std::invalid_argument("kernel \"" + spec.toStdString() +
                                "\": expected OP:DTYPE:DIM=V,... (gemm:bf16:M=4096,N=4096,K=4096)");
  KernelDesc k;
  const auto op = parse_op(parts[0].trimmed().toStdString());
  if (!op) throw std::invalid_argument("unknown op \"" + parts[0].toStdString() + "\"");
  k.op = *op;
  const auto dt = parse_dtype(parts[1].trimmed().toStdString());
  if (!dt) throw std::invalid_argument("unknown dtype \"" + parts[1].toStdString() + "\"");
  k.dtype = *dt;
  for (const QString& kv : parts[2].split(',', Qt::SkipEmptyParts)) {
    const QStringList p = kv.split('=');
    bool ok = false;
    const qlonglong v = p.size() == 2 ? p[1].trimmed().toLongLong(&ok) : 0;
    if (!ok) throw std::invalid_argument("shape \"" + kv.toStdString() + "\": expected DIM=INTEGER");
    int64_t* field = shape_field(k.shape, p[0].trimmed().toStdString());
    if (!field) throw std::invalid_argument("unknown dimension \"" + p[0].toStdString() + "\"");
    *field = v;
  }
  if (auto why = validate_shape(k.op, k.shape)) throw std::invalid_argument(*why);
  return k;
}

QString kernel_spec_string(const KernelDesc& k) {
  QStringList dims;
  for (auto name : shape_columns(k.op))
    dims << QString::fromUtf8(name.data(), static_cast<int>(name.size())) + '=' +
                QString::number(shape_value(k.shape, name));
  const auto op = op_name(k.op);
  const auto dt = dtype_name(k.dtype);
  return QString::fromUtf8(op.data(), static_cast<int>(op.size())) + ':' +
         QString::fromUtf8(dt.data(), static_cast<int>(dt.size())) + ':' + dims.join(',');
}

QString default_shape_text(Op op) {
  QStringList dims;
  for (auto name : shape_columns(op)) {
    const std::string n(name);
    qlonglong v = 4096;
    if (n == "B" || n == "Bt" || n == "Hkv")
      v = 8;
    else if (n == "S" || n == "L")
      v = 2048;
    else if (n == "Hq")
      v = 32;
    else if (n == "D")
      v = 128;
    else if (n == "T")
      v = 4096;
    else if (n == "I")
      v = 14336;
    else if (n == "V")
      v = 128256;
    else if (n == "E")
      v = 8;
    else if (n == "topk")
      v = 2;
    else if (n == "bytes")
      v = 64 << 20;
    else if (n == "ranks")
      v = 8;
    dims << QString::fromStdString(n) + '=' + QString::number(v);
  }
  return dims.join(',');
}

}  // namespace perfloom::ui
