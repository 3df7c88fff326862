# hrr-playback in a ROCm image: open an archive you were handed without touching the host.
#
#   docker build -t hrr-playback:rocm .
#   docker run --rm --device=/dev/kfd --device=/dev/dri \
#       -v "$PWD/my_capture.hrr:/capture:ro" hrr-playback:rocm hrr-playback /capture --info
#
# The ROCm image of containers/README.md (the CUDA one is containers/cuda/Dockerfile). Offline,
# without a registry: `hrr-pack image --base <base.tar> -o hrr-image.tar` (README, "Containers").
# Build stage: the toolchain image is only used to compile; hrr-playback loads the HIP runtime
# at run time, so it needs no ROCm to build. Built against Debian 12's glibc (2.36); the base
# has 2.39.
FROM rust:1.85-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p hrr-playback \
    && install -D -m 0755 target/release/hrr-playback /out/hrr-playback

# ROCm 6.4 development image (HIP runtime, compiler and system libraries all installed).
FROM rocm/dev-ubuntu-24.04:6.4.1
COPY --from=build /out/hrr-playback /usr/local/bin/hrr-playback
# Never create /capture: users bind-mount an archive folder or a packed file there.
CMD ["hrr-playback", "--help"]
