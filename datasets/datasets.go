// Package datasets embeds the small real dataset that ships with colo, so
// that `colo demo` and the fast tests run on real data on a fresh machine
// with nothing else present.
//
// The dataset is the 20 Newsgroups corpus in Jason Rennie's "bydate"
// bag-of-words form, as libsvm text compressed with xz: 11,269 training and
// 7,505 test documents, 61,188 words, 20 classes (see 20news/README.md for
// its provenance and checksums). Larger datasets live outside the
// repository, in ../shared/data.
package datasets

import (
	"bytes"
	_ "embed"
	"io"
)

//go:embed 20news/20news-bydate.train.libsvm.xz
var news20Train []byte

//go:embed 20news/20news-bydate.test.libsvm.xz
var news20Test []byte

//go:embed 20news/20news-bydate.labels.tsv
var news20Labels []byte

// News20Train names the embedded 20 Newsgroups training file in messages.
const News20Train = "20news-bydate.train.libsvm.xz (embedded)"

// News20Test names the embedded 20 Newsgroups test file in messages.
const News20Test = "20news-bydate.test.libsvm.xz (embedded)"

// OpenNews20Train returns the xz-compressed libsvm text of the 20
// Newsgroups training set: 11,269 documents, labels 1..20.
func OpenNews20Train() io.Reader { return bytes.NewReader(news20Train) }

// OpenNews20Test returns the xz-compressed libsvm text of the 20
// Newsgroups test set: 7,505 documents, labels 1..20.
func OpenNews20Test() io.Reader { return bytes.NewReader(news20Test) }

// News20Labels returns the tab-separated table of class ids and newsgroup
// names (header `id	name`).
func News20Labels() []byte { return bytes.Clone(news20Labels) }
