# colo in a container: a static binary on a distroless base (no shell, no
# libc, runs as an unprivileged user). Build and run:
#   docker build -t colo .
#   docker run --rm colo launch -n 2
# deploy/kubernetes uses this image; docs/deploy.md walks through it.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/colo ./cmd/colo

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/colo /usr/local/bin/colo
EXPOSE 9091 9100
ENTRYPOINT ["/usr/local/bin/colo"]
