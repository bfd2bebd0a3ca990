// The one device scope guard: makes a GPU current for the runtime calls of a scope and
// restores the application's device afterwards (the application's current device is its
// business, not ours). Setting the device also makes its primary context current for
// driver calls.
#pragma once

#include "base/status.h"
#include "cuda/runtime.h"

namespace gcoll {

class DeviceScope {
 public:
  // `r`: the runtime of the device (the process's, or one a test hands in).
  explicit DeviceScope(int dev, cuda::Runtime &r = cuda::runtime()) : rt_(r) {
    prev_ = r.current_device();
    status_ = r.set_device(dev);
    set_ = dev;
  }
  ~DeviceScope() {
    if (prev_ >= 0 && prev_ != set_) rt_.set_device(prev_);
  }
  DeviceScope(const DeviceScope &) = delete;
  DeviceScope &operator=(const DeviceScope &) = delete;
  // Whether the device could be made current.
  Status status() const { return status_; }

 private:
  cuda::Runtime &rt_;
  int prev_ = -1, set_ = -1;
  Status status_ = Status::Ok;
};

}  // namespace gcoll
