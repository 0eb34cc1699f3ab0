// PyTorch side of bench/compare_pytorch.sh: in-place op through a view (x[0:32].lerp_(g)) in libtorch eager and LTC.
#include <torch/torch.h>
#include <torch/csrc/lazy/ts_backend/ts_backend_impl.h>
#include <torch/csrc/lazy/core/lazy_graph_executor.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
static void bench(const char *label, torch::Device dev, bool lazy) {
  auto x = torch::randn({64}).to(dev), g = torch::randn({32}).to(dev);
  auto sync = [&]{ if (lazy) torch::lazy::LazyGraphExecutor::Get()->SyncLiveTensorsGraph(nullptr, {}, true); };
  int M = atoi(getenv("M"));
  double t0 = now();
  for (int i = 0; i < M; i++) x.slice(0, 0, 32).lerp_(g, 0.1);
  double t1 = now(); sync(); double t2 = now();
  printf("%s view.lerp_ chain of %d: %.3f us/op (sync %.2f ms)\n", label, M, 1e6*(t1-t0)/M, 1e3*(t2-t1));
}
int main() {
  torch::set_num_threads(1);
  bench("eager-cpu", torch::kCPU, false);
  torch::lazy::InitTorchScriptBackend();
  bench("ltc-ts", torch::Device(torch::kLazy), true);
}
