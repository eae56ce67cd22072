// Compile-time check, with the toolkit's headers, of the CUDA runtime ABI that device_events.cc declares
// itself (it is built without CUDA headers and loads the runtime at run time).
#include <cuda_runtime_api.h>

#include <type_traits>

static_assert(sizeof(cudaError_t) == sizeof(int), "cudaError_t is passed as int");
static_assert(cudaSuccess == 0 && cudaErrorNotReady == 600 && cudaErrorCudartUnloading == 4,
              "device_events.cc kCudaSuccess/kCudaErrorNotReady/kCudaErrorCudartUnloading");
static_assert(cudaEventDisableTiming == 0x02, "device_events.cc kCudaEventDisableTiming");
static_assert(cudaStreamCaptureStatusNone == 0, "a zero capture status means 'not capturing'");
static_assert(sizeof(cudaStreamCaptureStatus) == sizeof(int), "cudaStreamIsCapturing writes an int");
static_assert(std::is_pointer_v<cudaEvent_t> && std::is_pointer_v<cudaStream_t>,
              "events and streams are pointers");
static_assert(std::is_same_v<decltype(&cudaEventQuery), cudaError_t (*)(cudaEvent_t)>, "cudaEventQuery");
static_assert(std::is_same_v<decltype(&cudaEventRecord), cudaError_t (*)(cudaEvent_t, cudaStream_t)>,
              "cudaEventRecord");
static_assert(
    std::is_same_v<decltype(&cudaEventCreateWithFlags), cudaError_t (*)(cudaEvent_t*, unsigned int)>,
    "cudaEventCreateWithFlags");
static_assert(std::is_same_v<decltype(&cudaGetDeviceCount), cudaError_t (*)(int*)>, "cudaGetDeviceCount");
