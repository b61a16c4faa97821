#pragma once
// Weighted ridge least squares for the tuner's few coefficients (DESIGN.md, idea 3). The systems
// are tiny (about ten unknowns), so the normal equations with partial pivoting are plenty.
#include <cstddef>
#include <vector>

namespace perfloom::tuner {

// Accumulates rows of min  sum_i w_i (x_i . beta - y_i)^2 + ridge * |beta - prior|^2.
class LeastSquares {
 public:
  explicit LeastSquares(std::size_t unknowns);

  void add(const std::vector<double>& x, double y, double weight = 1.0);
  std::size_t rows() const { return rows_; }
  std::size_t unknowns() const { return n_; }

  // Solves with a ridge toward `prior` (zeros when empty). A direction the rows do not determine
  // and no ridge pins stays at the prior. Throws std::invalid_argument on a prior of wrong size.
  std::vector<double> solve(double ridge = 0.0, const std::vector<double>& prior = {}) const;

 private:
  std::size_t n_;
  std::size_t rows_ = 0;
  std::vector<double> gram_;  // n x n, row-major
  std::vector<double> rhs_;
};

}  // namespace perfloom::tuner
