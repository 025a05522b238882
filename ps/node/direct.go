package node

import (
	"colo/ps/server"
	"colo/transport"
)

// direct is the machine's server as its worker's worker.Local: the
// calls it serves on the caller's goroutine are counted in the members'
// traffic inside the machine (localCounters) as the messages they
// replace would be (the request, and its answer when it gives one), at
// their frame size, so that the machine's inner traffic does not depend
// on which path a call took (the timing decides it: a call goes direct
// only with nothing in flight).
type direct struct {
	*server.Server
	wrk, srv *member
}

// metaSize is the body of a request: its round and epoch (proto.AppendMetaEpoch).
const metaSize = 8

// count counts a message of size bytes from member from to member to.
func count(from, to *member, size int) {
	from.local.msgsSent.Add(1)
	from.local.bytesSent.Add(uint64(size))
	to.local.msgsRecv.Add(1)
	to.local.bytesRecv.Add(uint64(size))
}

// answerSize is the frame size of an answer with vals and lens, or of
// the error answer err.
func answerSize(vals []float32, lens []int32, err error) int {
	n := transport.PrefixSize + transport.HeaderSize
	if err != nil {
		return n + len(err.Error())
	}
	return n + 4*len(vals) + 4*len(lens)
}

func (d direct) PullLocal(worker int, id uint64, round int64, epoch uint64, keys []uint64, room []float32, lens []int32) ([]float32, []int32, error, bool) {
	vals, lensOut, err, ok := d.Server.PullLocal(worker, id, round, epoch, keys, room, lens)
	if ok {
		count(d.wrk, d.srv, transport.PrefixSize+transport.HeaderSize+metaSize+8*len(keys))
		count(d.srv, d.wrk, answerSize(vals, lensOut, err))
	}
	return vals, lensOut, err, ok
}

func (d direct) PushLocal(worker int, id uint64, round int64, epoch uint64, keys []uint64, vals []float32, lens []int32) (bool, error, bool) {
	answered, err, ok := d.Server.PushLocal(worker, id, round, epoch, keys, vals, lens)
	if ok {
		count(d.wrk, d.srv, transport.PrefixSize+transport.HeaderSize+metaSize+8*len(keys)+4*len(vals)+4*len(lens))
		if answered {
			count(d.srv, d.wrk, answerSize(nil, nil, err))
		}
	}
	return answered, err, ok
}
