#pragma once
// The binary payloads the fixtures return, base64: a 1x1 red PNG and a minimal WAV file.
namespace sandgate::conformance {

inline constexpr const char* kPngBase64 =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg"
    "==";
inline constexpr const char* kWavBase64 =
    "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

}  // namespace sandgate::conformance
