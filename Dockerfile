# syntax=docker/dockerfile:1
# The Gantry manager image, for users with Docker:
#   docker build --build-arg VERSION=0.1.0 -t ghcr.io/gantry-dev/gantry:0.1.0 .
#   docker buildx build --platform linux/amd64,linux/arm64 ...
# `make image` builds the same image without Docker, from Go modules only
# (hack/imagebuild): same binary flags, user, entrypoint and labels.

# The builder runs on the build machine and cross-compiles for the target.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY pkg/ pkg/
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -buildvcs=false \
      -ldflags "-s -w -buildid= -X github.com/gantry-dev/gantry/pkg/version.Version=${VERSION}" \
      -o /out/manager ./cmd/manager

FROM gcr.io/distroless/static:nonroot
ARG VERSION=dev
LABEL org.opencontainers.image.source="https://github.com/gantry-dev/gantry" \
      org.opencontainers.image.title="gantry" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/manager /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
