//===- sanitizers.h - whether AddressSanitizer is on, for GCC and clang ---===//
//
// GCC defines __SANITIZE_ADDRESS__ under -fsanitize=address; clang (the
// sanitizer tree, scripts/sanitize.sh) says so through __has_feature.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TESTS_RUNTIME_SANITIZERS_H
#define TESSEL_TESTS_RUNTIME_SANITIZERS_H

#if defined(__SANITIZE_ADDRESS__)
#define TESSEL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TESSEL_ASAN 1
#endif
#endif

#endif // TESSEL_TESTS_RUNTIME_SANITIZERS_H
