module colo

go 1.26.8

require (
	github.com/klauspost/compress v1.20.3
	github.com/ulikunitz/xz v0.5.17
	gonum.org/v1/gonum v0.17.0
)

require golang.org/x/sys v0.49.0
