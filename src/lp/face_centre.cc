#include "lp/face_centre.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace dlsched::hetero {
namespace {

// The optimal face relaxed by this much (relative), so that it has an interior.
constexpr double kRelax = 1e-4;

// Cholesky of the n x n symmetric positive definite `a` (row-major), in place: the lower factor.
// False when a pivot is not positive.
bool Cholesky(double* a, int n) {
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k <= i; ++k) {
      double sum = a[i * n + k];
      for (int p = 0; p < k; ++p) sum -= a[i * n + p] * a[k * n + p];
      if (k == i) {
        if (!(sum > 0)) return false;
        a[i * n + i] = std::sqrt(sum);
      } else {
        a[i * n + k] = sum / a[k * n + k];
      }
    }
  }
  return true;
}

// Solves L L^T y = b in place with Cholesky's factor.
void CholeskySolve(const double* l, int n, double* b) {
  for (int i = 0; i < n; ++i) {
    for (int p = 0; p < i; ++p) b[i] -= l[i * n + p] * b[p];
    b[i] /= l[i * n + i];
  }
  for (int i = n - 1; i >= 0; --i) {
    for (int p = i + 1; p < n; ++p) b[i] -= l[p * n + i] * b[p];
    b[i] /= l[i * n + i];
  }
}

}  // namespace

Allocation CentreOfOptimalFace(const AllocationProblem& problem, const std::vector<int>& jobs,
                               const std::vector<double>& need, const Allocation& start) {
  const int types = problem.num_types;
  const int n = static_cast<int>(jobs.size());
  // The variables: X[j][t] where j can run on t, job by job (begin[k] .. begin[k + 1]).
  std::vector<int> begin(n + 1, 0), var_type;
  std::vector<double> a;  // thr(j, t) / need[k]
  for (int k = 0; k < n; ++k) {
    const int j = jobs[k];
    for (int t = 0; t < types; ++t) {
      if (problem.thr(j, t) > 0 && problem.gpus_per_type[t] > 0) {
        var_type.push_back(t);
        a.push_back(problem.thr(j, t) / need[k]);
      }
    }
    begin[k + 1] = static_cast<int>(var_type.size());
    if (begin[k + 1] == begin[k]) return start;  // a job with no variable: no interior
  }
  const int vars = static_cast<int>(var_type.size());
  if (n == 0) return start;
  double level = std::numeric_limits<double>::infinity();
  double total_gang = 0;
  for (int k = 0; k < n; ++k) {
    double rate = 0;
    for (int v = begin[k]; v < begin[k + 1]; ++v) rate += a[v] * start.at(jobs[k], var_type[v]);
    level = std::min(level, rate);
    total_gang += problem.gang[jobs[k]];
  }
  if (!(level > 0)) return start;
  const double floor = level * (1 - kRelax);
  // The start: the vertex mixed with a point strictly inside every constraint but the rates'.
  const double eps = kRelax / 2;
  std::vector<double> x(vars);
  for (int k = 0; k < n; ++k) {
    const int m = begin[k + 1] - begin[k];
    for (int v = begin[k]; v < begin[k + 1]; ++v) {
      const int t = var_type[v];
      const double inner = std::min(1.0 / (2 * m), problem.gpus_per_type[t] / (2 * total_gang));
      x[v] = (1 - eps) * std::clamp(start.at(jobs[k], t), 0.0, 1.0) + eps * inner;
    }
  }
  std::vector<double> row(n), rate(n), cap(types);
  // The slacks at y; false unless all are positive.
  const auto slacks = [&](const std::vector<double>& y) {
    std::fill(cap.begin(), cap.end(), 0.0);
    for (int t = 0; t < types; ++t) cap[t] = problem.gpus_per_type[t];
    for (int k = 0; k < n; ++k) {
      row[k] = 1;
      rate[k] = -floor;
      for (int v = begin[k]; v < begin[k + 1]; ++v) {
        if (!(y[v] > 0)) return false;
        row[k] -= y[v];
        rate[k] += a[v] * y[v];
        cap[var_type[v]] -= problem.gang[jobs[k]] * y[v];
      }
      if (!(row[k] > 0) || !(rate[k] > 0)) return false;
    }
    for (int v = 0; v < vars; ++v) {
      if (!(cap[var_type[v]] > 0)) return false;
    }
    return true;
  };
  // The barrier -sum log(slack) at y (+infinity outside).
  std::vector<char> has_vars(types, 0);
  for (int t : var_type) has_vars[t] = 1;
  const auto barrier = [&](const std::vector<double>& y) {
    if (!slacks(y)) return std::numeric_limits<double>::infinity();
    double phi = 0;
    for (double value : y) phi -= std::log(value);
    for (int k = 0; k < n; ++k) phi -= std::log(row[k]) + std::log(rate[k]);
    for (int t = 0; t < types; ++t) {
      if (has_vars[t]) phi -= std::log(cap[t]);
    }
    return phi;
  };
  double phi = barrier(x);
  if (!std::isfinite(phi)) return start;

  std::vector<double> grad(vars), y(vars), z(static_cast<size_t>(vars) * types), step(vars);
  std::vector<double> block(types * types), col(types), c(types * types), w(types), trial(vars);
  for (int iteration = 0; iteration < 200; ++iteration) {
    slacks(x);
    for (int k = 0; k < n; ++k) {
      const double g = problem.gang[jobs[k]];
      for (int v = begin[k]; v < begin[k + 1]; ++v) {
        grad[v] = -1 / x[v] + 1 / row[k] - a[v] / rate[k] + g / cap[var_type[v]];
      }
    }
    // Newton: (B + U W U^T) d = -grad, B per job, U[v][t] = gang where v is of type t and
    // W = diag(1 / cap_t^2); Woodbury through C = W^-1 + U^T B^-1 U.
    std::fill(z.begin(), z.end(), 0.0);
    bool factored = true;
    for (int k = 0; k < n && factored; ++k) {
      const int m = begin[k + 1] - begin[k];
      const double g = problem.gang[jobs[k]];
      const double r2 = 1 / (row[k] * row[k]), q2 = 1 / (rate[k] * rate[k]);
      for (int i = 0; i < m; ++i) {
        for (int l = 0; l < m; ++l) {
          const int vi = begin[k] + i, vl = begin[k] + l;
          block[i * m + l] = r2 + a[vi] * a[vl] * q2 + (i == l ? 1 / (x[vi] * x[vi]) : 0.0);
        }
      }
      factored = Cholesky(block.data(), m);
      if (!factored) break;
      for (int i = 0; i < m; ++i) y[begin[k] + i] = -grad[begin[k] + i];
      CholeskySolve(block.data(), m, &y[begin[k]]);
      for (int i = 0; i < m; ++i) {
        std::fill(col.begin(), col.begin() + m, 0.0);
        col[i] = g;
        CholeskySolve(block.data(), m, col.data());
        const int t = var_type[begin[k] + i];
        for (int l = 0; l < m; ++l) z[static_cast<size_t>(begin[k] + l) * types + t] = col[l];
      }
    }
    if (!factored) break;
    std::fill(c.begin(), c.end(), 0.0);
    std::fill(w.begin(), w.end(), 0.0);
    for (int t = 0; t < types; ++t) c[t * types + t] = has_vars[t] ? cap[t] * cap[t] : 1.0;
    for (int k = 0; k < n; ++k) {
      const double g = problem.gang[jobs[k]];
      for (int v = begin[k]; v < begin[k + 1]; ++v) {
        const int t = var_type[v];
        for (int s = 0; s < types; ++s)
          c[t * types + s] += g * z[static_cast<size_t>(v) * types + s];
        w[t] += g * y[v];
      }
    }
    if (!Cholesky(c.data(), types)) break;
    CholeskySolve(c.data(), types, w.data());
    double decrement = 0;
    for (int v = 0; v < vars; ++v) {
      double dv = y[v];
      for (int t = 0; t < types; ++t) dv -= z[static_cast<size_t>(v) * types + t] * w[t];
      step[v] = dv;
      decrement -= grad[v] * dv;
    }
    if (!(decrement > 1e-12)) break;
    // Backtracking: inside, then a sufficient decrease of the barrier.
    double alpha = 1;
    double next = std::numeric_limits<double>::infinity();
    for (int halving = 0; halving < 60; ++halving, alpha /= 2) {
      for (int v = 0; v < vars; ++v) trial[v] = x[v] + alpha * step[v];
      next = barrier(trial);
      if (next <= phi - 0.25 * alpha * decrement) break;
    }
    if (!(next < phi)) break;
    x.swap(trial);
    phi = next;
  }
  Allocation centre{types, std::vector<double>(start.fraction.size(), 0.0)};
  for (int k = 0; k < n; ++k) {
    for (int v = begin[k]; v < begin[k + 1]; ++v) {
      centre.fraction[static_cast<size_t>(jobs[k]) * types + var_type[v]] = x[v];
    }
  }
  return centre;
}

}  // namespace dlsched::hetero
