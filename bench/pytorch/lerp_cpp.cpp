// PyTorch side of bench/compare_pytorch.sh: per-op cost of aten::lerp in libtorch C++ (eager CPU) and the
// lazy tensor core with the TorchScript backend (trace only, then sync).
#include <torch/torch.h>
#include <torch/csrc/lazy/ts_backend/ts_backend_impl.h>
#include <torch/csrc/lazy/core/lazy_graph_executor.h>
#include <chrono>
#include <cstdio>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
static void bench(const char *label, torch::Device dev, bool lazy) {
  const int N = 20000;
  auto a = torch::randn({2, 3}).to(dev), b = torch::randn({2, 3}).to(dev);
  auto x = torch::randn({64}).to(dev), g = torch::randn({64}).to(dev);
  auto sync = [&]{ if (lazy) torch::lazy::LazyGraphExecutor::Get()->SyncLiveTensorsGraph(nullptr, {}, true); };
  for (int i = 0; i < 100; i++) { auto c = torch::lerp(a, b, 0.5); } sync();
  double t0 = now();
  for (int i = 0; i < N; i++) { auto c = torch::lerp(a, b, 0.5); }
  double t1 = now(); sync(); double t2 = now();
  printf("%s lerp out-of-place: %.3f us/op (sync %.2f ms)\n", label, 1e6*(t1-t0)/N, 1e3*(t2-t1));
  int M = 1000;
  t0 = now();
  for (int i = 0; i < M; i++) x.lerp_(g, 0.1);
  t1 = now(); sync(); t2 = now();
  printf("%s lerp_ in-place chain of %d: %.3f us/op (sync %.2f ms)\n", label, M, 1e6*(t1-t0)/M, 1e3*(t2-t1));
}
int main() {
  torch::set_num_threads(1);
  bench("eager-cpu", torch::kCPU, false);
  torch::lazy::InitTorchScriptBackend();
  bench("ltc-ts", torch::Device(torch::kLazy), true);
}
