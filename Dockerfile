# hrr-playback in a small image, for opening archives without touching the host:
#   docker build -t hrr-playback .
#   docker run --rm -v "$PWD/run.hrr:/capture:ro" hrr-playback hrr-playback /capture --info
# Replay needs the GPU driver from the host (NVIDIA: run with --gpus all). Not yet exercised by
# the tests (no container engine on CI); the tested images are the container issue's work.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p hrr-playback

FROM debian:bookworm-slim
COPY --from=build /src/target/release/hrr-playback /usr/local/bin/hrr-playback
CMD ["hrr-playback", "--version"]
