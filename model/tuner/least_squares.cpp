#include "model/tuner/least_squares.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace perfloom::tuner {

LeastSquares::LeastSquares(std::size_t unknowns) : n_(unknowns), gram_(unknowns * unknowns, 0.0), rhs_(unknowns, 0.0) {}

void LeastSquares::add(const std::vector<double>& x, double y, double weight) {
  if (x.size() != n_)
    throw std::invalid_argument("least squares: row has " + std::to_string(x.size()) + " values, expected " +
                                std::to_string(n_));
  for (std::size_t i = 0; i < n_; ++i) {
    if (x[i] == 0) continue;
    const double wx = weight * x[i];
    rhs_[i] += wx * y;
    for (std::size_t j = 0; j < n_; ++j) gram_[i * n_ + j] += wx * x[j];
  }
  ++rows_;
}

std::vector<double> LeastSquares::solve(double ridge, const std::vector<double>& prior) const {
  if (!prior.empty() && prior.size() != n_) throw std::invalid_argument("least squares: prior of wrong size");
  const std::size_t n = n_;
  // Solve for the deviation from the prior: (G + ridge I) d = rhs - G prior.
  std::vector<double> a(gram_), b(rhs_);
  for (std::size_t i = 0; i < n; ++i) {
    if (!prior.empty())
      for (std::size_t j = 0; j < n; ++j) b[i] -= gram_[i * n + j] * prior[j];
    a[i * n + i] += ridge;
  }
  // Scale so that a pivot's smallness is judged relative to its row, not to the units of a feature.
  double scale = 0;
  for (std::size_t i = 0; i < n; ++i) scale = std::max(scale, std::abs(a[i * n + i]));
  const double tiny = std::max(scale, 1e-300) * 1e-12;
  std::vector<std::size_t> perm(n);
  for (std::size_t i = 0; i < n; ++i) perm[i] = i;
  std::vector<bool> dead(n, false);
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t piv = c;
    for (std::size_t r = c + 1; r < n; ++r)
      if (std::abs(a[r * n + c]) > std::abs(a[piv * n + c])) piv = r;
    if (piv != c) {
      for (std::size_t j = 0; j < n; ++j) std::swap(a[c * n + j], a[piv * n + j]);
      std::swap(b[c], b[piv]);
    }
    if (std::abs(a[c * n + c]) <= tiny) {  // undetermined direction: keep the prior there
      dead[c] = true;
      continue;
    }
    for (std::size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r * n + c] / a[c * n + c];
      if (f == 0) continue;
      for (std::size_t j = c; j < n; ++j) a[r * n + j] -= f * a[c * n + j];
      b[r] -= f * b[c];
    }
  }
  std::vector<double> beta(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    const double d = dead[i] ? 0.0 : b[i] / a[i * n + i];
    beta[i] = (prior.empty() ? 0.0 : prior[i]) + (std::isfinite(d) ? d : 0.0);
  }
  return beta;
}

}  // namespace perfloom::tuner
