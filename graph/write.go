package graph

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
)

// WriteHMetis writes g in the hMETIS hypergraph format, with the samples as
// vertices and the parameters as nets (hyperedges): a first line
// `<#nets> <#vertices>`, then one line per parameter listing its samples
// from 1. Vertex i of the file is sample i-1, so a partition file written by
// hMETIS, PaToH or Zoltan for it (one part number per line, one line per
// vertex) is directly a data placement of the samples in colo's data.part
// format. Parameters without samples, which loaders never produce, are left
// out, since hMETIS does not accept empty nets; net numbers are not used by
// partition files.
func WriteHMetis(w io.Writer, g *Graph) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	nets := 0
	for v := range g.NumParams() {
		if g.ParamDegree(v) > 0 {
			nets++
		}
	}
	buf := make([]byte, 0, 64)
	buf = strconv.AppendInt(buf, int64(nets), 10)
	buf = append(buf, ' ')
	buf = strconv.AppendInt(buf, int64(g.NumSamples()), 10)
	buf = append(buf, '\n')
	if _, err := bw.Write(buf); err != nil {
		return fmt.Errorf("write hmetis: %w", err)
	}
	for v := range g.NumParams() {
		samples := g.Samples(v)
		if len(samples) == 0 {
			continue
		}
		buf = buf[:0]
		for i, u := range samples {
			if i > 0 {
				buf = append(buf, ' ')
			}
			buf = strconv.AppendUint(buf, uint64(u)+1, 10)
		}
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return fmt.Errorf("write hmetis: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write hmetis: %w", err)
	}
	return nil
}

// WriteLibSVM writes g as libsvm text: one line `label id:value ...` per
// sample, with the parameter ids of the input (ParamID) in increasing order.
// Labels are written with the fewest digits that read back as the same
// float64, values with the fewest that read back as the same float32, so
// ReadLibSVM of the output (with the same options) gives a graph identical
// to g when g came from libsvm. A graph without labels gets label 0, and
// one without values gets value 1.
func WriteLibSVM(w io.Writer, g *Graph) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var buf []byte
	for u := range g.NumSamples() {
		buf = strconv.AppendFloat(buf[:0], g.Label(u), 'g', -1, 64)
		vals := g.Values(u)
		for i, v := range g.Params(u) {
			buf = append(buf, ' ')
			buf = strconv.AppendUint(buf, g.ParamID(int(v)), 10)
			buf = append(buf, ':')
			if vals == nil {
				buf = append(buf, '1')
			} else {
				buf = appendFloat32(buf, vals[i])
			}
		}
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return fmt.Errorf("write libsvm: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write libsvm: %w", err)
	}
	return nil
}

// appendFloat32 appends the shortest decimal of v that reads back as v
// through float32(strconv.ParseFloat(s, 64)), the conversion of the
// readers. The shortest float32 decimal almost always does; in the rare
// case that rounding twice (to float64, then to float32) lands elsewhere,
// the exact float64 decimal of v is written instead.
func appendFloat32(dst []byte, v float32) []byte {
	n := len(dst)
	dst = strconv.AppendFloat(dst, float64(v), 'g', -1, 32)
	if f, err := strconv.ParseFloat(string(dst[n:]), 64); err == nil && float32(f) == v {
		return dst
	}
	return strconv.AppendFloat(dst[:n], float64(v), 'g', -1, 64)
}
