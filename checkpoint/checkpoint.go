// Package checkpoint stores the checkpoints of a training job: a
// directory per checkpoint, named by the round it was taken after
// (round-000000120), holding one file per node (each server's snapshot
// of its store, each worker's progress) and a MANIFEST written last,
// which names the round, the job the checkpoint is of, and the size and
// CRC-32C (Castagnoli) of every file. A checkpoint is complete when its
// MANIFEST is there and every file it lists has that size and checksum;
// anything else (a missing MANIFEST, a file truncated at any byte, a
// flipped bit, in a file or in the MANIFEST, which carries a checksum of
// its own) is refused with an error naming the file, and Latest falls
// back to the newest complete checkpoint before it.
//
// Every file is written atomically (a temporary file, fsync, rename), so
// a crash leaves either a whole file or none; the MANIFEST vouches for
// the others and is written once they are all on disk. A volatile
// checkpoint (Options.Volatile) leaves the fsyncs out: a crash of the
// machine may tear it, and its checksums then refuse it. Prune keeps the
// newest complete checkpoints and removes the rest, but for the newest of
// those it removes, which becomes the spare directory: the next
// checkpoint overwrites its files in place of new ones (WriteFileFunc),
// which saves the kernel a page allocation and a free per 4 KiB. The package knows nothing of what the files hold beyond the
// server snapshot format (snapshot.go); the protocol that makes the
// files of one round consistent across nodes is the training loop's
// (package train, checkpoint.go).
//
// Incremental checkpoints. A server's file may be a delta
// (server-SSS.delta, Snapshot.Delta): the slots its store wrote since
// the checkpoint of an earlier round, its base, whose file of the same
// server is a snapshot or a delta in turn. The MANIFEST lists each
// delta's base (File.Base, and the checksum of the base's file,
// File.BaseCRC32C) and the rounds of the whole chain (Manifest.Needs,
// which Commit fills from the bases' manifests, refusing a base that is
// not there). A checkpoint is complete when its own files and every
// checkpoint of its chain verify (VerifyChain, which Latest calls): a
// damaged delta or base, a missing one, or a base whose round was
// written again since, is refused naming the file, and Latest falls
// back to the newest checkpoint whose chain verifies. ReadSnapshot
// restores a server's snapshot from the chain, the base's snapshot then
// each delta in order (ApplyDelta), the same bytes a whole snapshot of
// that round holds. Prune keeps every checkpoint a kept one needs.
//
// A MANIFEST or file that is not a regular file (a FIFO, a device, a
// symbolic link) is refused, never read.
//
// Writing or verifying a checkpoint of n bytes costs O(n), and verifying
// one with a chain O(the chain's bytes); Latest reads the checkpoints
// newest first until one verifies.
//
//	f, _ := checkpoint.WriteFile(dir, 120, "worker-000.json", data)
//	_ = checkpoint.Commit(dir, checkpoint.Manifest{Round: 120, Job: id, Files: files})
//	m, refused, err := checkpoint.Latest(dir) // the newest complete one
//	data, err := m.Read("worker-000.json")    // checked against the manifest
package checkpoint

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ManifestName is the name of the file that completes a checkpoint.
const ManifestName = "MANIFEST"

// SpareDir is the directory, beside the checkpoints, where Prune moves
// the newest checkpoint it removes, so that WriteFileFunc overwrites its
// files instead of making new ones. It is no checkpoint (its name is not
// a round's), and what it holds is never read.
const SpareDir = "spare"

// Format is the version of the layout this package writes and reads.
const Format = 1

// MaxManifest bounds the size of a MANIFEST, so that a stray large file
// of that name is refused before it is read.
const MaxManifest = 16 << 20

// castagnoli is the CRC-32C table.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC-32C of data.
func Checksum(data []byte) uint32 { return crc32.Checksum(data, castagnoli) }

// File is one file of a checkpoint, as its manifest lists it.
type File struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
	// Base is, for a delta (a server's file named DeltaName), the round
	// of the checkpoint whose file of the same server it builds on, and
	// BaseCRC32C that file's CRC-32C as the base's manifest lists it
	// (Commit fills it): a checkpoint of the base's round written again
	// later (a job resumed from an earlier one, which goes on differently
	// under asynchronous training or with other settings) is not the base
	// the delta was taken on, and the delta is refused. 0 checks nothing
	// (a manifest written before the field).
	Base       int    `json:"base,omitempty"`
	BaseCRC32C uint32 `json:"base_crc32c,omitempty"`
}

// isDelta reports whether name is a delta's (DeltaName).
func isDelta(name string) bool { return strings.HasSuffix(name, ".delta") }

// Manifest describes a complete checkpoint.
type Manifest struct {
	Format int `json:"format"`
	// Round is the number of rounds every node had finished when the
	// checkpoint was taken.
	Round int `json:"round"`
	// Job identifies the job the checkpoint is of (its shape: the
	// application, machines, servers, keys…), so that a job resumes only
	// from its own checkpoints.
	Job string `json:"job"`
	// Files are the checkpoint's files, in name order.
	Files []File `json:"files"`
	// Volatile marks a checkpoint written without fsync (see
	// Options.Volatile).
	Volatile bool `json:"volatile,omitempty"`
	// Needs lists, newest first, the rounds of the earlier checkpoints
	// whose files this one's deltas build on, directly or through other
	// deltas of the same server (Commit fills it): its chain. A
	// checkpoint of whole snapshots needs none.
	Needs []int `json:"needs,omitempty"`
	// Dir is the checkpoint's directory (not written: set when read).
	Dir string `json:"-"`
}

// RoundDir returns the directory of the checkpoint of round in dir.
func RoundDir(dir string, round int) string {
	return filepath.Join(dir, fmt.Sprintf("round-%09d", round))
}

// parseRoundDir returns the round of a checkpoint directory's name.
func parseRoundDir(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, "round-")
	if !ok || len(s) < 9 {
		return 0, false
	}
	r, err := strconv.Atoi(s)
	return r, err == nil && r >= 0
}

// WriteFile writes data as file name of the checkpoint of round in dir,
// atomically, creating the directories, and returns the file as the
// manifest lists it.
func WriteFile(dir string, round int, name string, data []byte) (File, error) {
	return Options{}.WriteFile(dir, round, name, data)
}

// WriteFileFunc is Options.WriteFileFunc with the zero Options: the file
// is durable.
func WriteFileFunc(dir string, round int, name string, write func(w io.Writer) error) (File, error) {
	return Options{}.WriteFileFunc(dir, round, name, write)
}

// Options say how the files of a checkpoint are written. The package's
// functions (WriteFile, WriteFileFunc, WriteSnapshot, Commit) write with
// the zero Options: every file durable.
type Options struct {
	// Volatile leaves out the fsync of each file and of the MANIFEST,
	// which says so (Manifest.Volatile). The checkpoint then survives the
	// crash of a process (its files are in the kernel's page cache, and
	// the kernel writes them to the disk within about 30 s) but perhaps
	// not the crash of the machine, after which it may be found torn:
	// refused by its sizes and checksums, as any damage is, and an older
	// one used. Prune keeps the newest durable checkpoint beside the
	// newest ones, so that one is there to fall back to.
	Volatile bool
}

// WriteFile is WriteFile with options o.
func (o Options) WriteFile(dir string, round int, name string, data []byte) (File, error) {
	return o.WriteFileFunc(dir, round, name, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFileFunc is WriteFile for a file that write writes to w (a
// buffered writer: many small writes cost no system call each); the size
// and CRC-32C are counted as the bytes go by. When write fails, no file
// is left.
//
// The file is written as a temporary file in the checkpoint's directory,
// made durable (fsync, unless o.Volatile) and renamed to its name, so
// that a crash leaves the whole file or none. When the spare directory (SpareDir, where Prune
// moves the newest checkpoint it removes) holds a file of the same name,
// that file is the temporary file: it is overwritten in place and cut to
// the new size, not created anew. The kernel then writes into pages it
// already holds instead of allocating a page per 4 KiB and freeing as
// many when the old file is removed, which is most of what writing a
// checkpoint costs the machine (a 9 MB checkpoint of 2.3 MB files: about
// 1.6 ms of CPU instead of 3.8 ms, fsync aside).
func (o Options) WriteFileFunc(dir string, round int, name string, write func(w io.Writer) error) (File, error) {
	if err := checkName(name); err != nil {
		return File{}, err
	}
	d := RoundDir(dir, round)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return File{}, fmt.Errorf("checkpoint: %w", err)
	}
	return o.write(d, name, filepath.Join(dir, SpareDir, name), write)
}

// write writes file name of directory d atomically (see WriteFileFunc),
// overwriting the file spare when there is one.
func (o Options) write(d, name, spare string, write func(w io.Writer) error) (File, error) {
	path := filepath.Join(d, name)
	tmp := filepath.Join(d, "."+name+".tmp")
	f, err := openTemp(tmp, spare)
	if err != nil {
		return File{}, fmt.Errorf("checkpoint: write %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	c := counter{w: bw}
	err = func() error {
		if err := write(&c); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		if err := f.Truncate(c.n); err != nil {
			return err
		}
		if !o.Volatile {
			if err := f.Sync(); err != nil {
				return err
			}
		}
		return f.Close()
	}()
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return File{}, fmt.Errorf("checkpoint: write %s: %w", path, err)
	}
	return File{Name: name, Size: c.n, CRC32C: c.crc}, nil
}

// openTemp opens tmp for writing from its start: the file spare, renamed
// to tmp, when there is one (spare may be "") and it is a regular file,
// or else a new empty file. Only a regular file is written over: a
// symbolic link, FIFO or device found at spare or tmp is removed, never
// followed or opened.
func openTemp(tmp, spare string) (*os.File, error) {
	if spare != "" && os.Rename(spare, tmp) == nil {
		if fi, err := os.Lstat(tmp); err == nil && fi.Mode().IsRegular() {
			if f, err := os.OpenFile(tmp, os.O_WRONLY, 0); err == nil {
				return f, nil
			}
		}
	}
	if fi, err := os.Lstat(tmp); err == nil && !fi.IsDir() {
		os.Remove(tmp)
	}
	return os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
}

// counter passes writes on to w, counting their bytes and CRC-32C.
type counter struct {
	w   io.Writer
	n   int64
	crc uint32
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	return n, err
}

// checkName refuses file names that are not plain names in the
// checkpoint's directory.
func checkName(name string) error {
	if name == "" || name == ManifestName || name != filepath.Base(name) || name == "." || name == ".." || strings.HasPrefix(name, ".") {
		return fmt.Errorf("checkpoint: file name %q: want a plain name other than %s", name, ManifestName)
	}
	return nil
}

// Commit writes m's MANIFEST in its round's directory of dir, which
// completes the checkpoint: every file it lists must be written (by
// WriteFile) before.
func Commit(dir string, m Manifest) error { return Options{}.Commit(dir, m) }

// Commit is Commit with options o; m.Volatile is set to o.Volatile, and
// m.Needs to the chain of its deltas, each of whose base checkpoint must
// be complete in dir and hold a file of the delta's server, whose
// checksum the delta's File.BaseCRC32C records. A
// durable MANIFEST (the zero Options) over a volatile one of the same
// round makes that checkpoint durable once its files are (Sync).
func (o Options) Commit(dir string, m Manifest) error {
	m.Format, m.Volatile = Format, o.Volatile
	m.Files = slices.Clone(m.Files) // sorted, and the bases' checksums filled
	slices.SortFunc(m.Files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	for i, f := range m.Files {
		if err := checkName(f.Name); err != nil {
			return err
		}
		if i > 0 && f.Name == m.Files[i-1].Name {
			return fmt.Errorf("checkpoint: file %s listed twice", f.Name)
		}
	}
	needs, err := chainOf(dir, m)
	if err != nil {
		return err
	}
	m.Needs = needs
	return o.writeManifest(dir, m)
}

// writeManifest writes m as the MANIFEST of its round's directory of dir.
func (o Options) writeManifest(dir string, m Manifest) error {
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	d := RoundDir(dir, m.Round)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	_, err = o.write(d, ManifestName, "", func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%s\ncrc32c %08x\n", body, Checksum(body))
		return err
	})
	return err
}

// Durable rewrites the MANIFEST of the complete checkpoint of round in
// dir durable (fsynced, without "volatile"), as it is, when it is
// volatile; its files must be made durable first (Sync). Its chain is
// not worked out again, as Commit would: a checkpoint kept as a link of
// a newer one's chain may hold deltas of other servers whose bases were
// pruned since.
func Durable(dir string, round int) error {
	m, err := Open(dir, round)
	if err != nil || !m.Volatile {
		return err
	}
	m.Volatile = false
	return Options{}.writeManifest(dir, *m)
}

// Sync makes the files names of the checkpoint of round in dir durable
// (fsync), as a checkpoint written with the zero Options has them.
func Sync(dir string, round int, names []string) error {
	d := RoundDir(dir, round)
	for _, name := range names {
		if err := checkName(name); err != nil {
			return err
		}
		f, err := os.Open(filepath.Join(d, name))
		if err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
	}
	return nil
}

// ParseManifest reads the content of a MANIFEST: a line of JSON and a
// line "crc32c" with the checksum of the JSON in hexadecimal. Errors say
// what is wrong, not where: the caller names the file.
func ParseManifest(data []byte) (Manifest, error) {
	var m Manifest
	body, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return m, errors.New("no end of line after the description: the file is truncated")
	}
	sum, ok := bytes.CutPrefix(rest, []byte("crc32c "))
	if !ok || len(sum) != 9 || sum[8] != '\n' {
		return m, errors.New(`no line "crc32c XXXXXXXX" after the description: the file is truncated or altered`)
	}
	want, err := strconv.ParseUint(string(sum[:8]), 16, 32)
	if err != nil || strings.ToLower(string(sum[:8])) != string(sum[:8]) {
		return m, fmt.Errorf("checksum %q is not lower-case hexadecimal", sum[:8])
	}
	if got := Checksum(body); uint32(want) != got {
		return m, fmt.Errorf("checksum %08x of the description, the file says %08x: the file is altered", got, want)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("description: %w", err)
	}
	switch {
	case m.Format != Format:
		return m, fmt.Errorf("format %d, this program reads format %d", m.Format, Format)
	case m.Round < 0:
		return m, fmt.Errorf("round %d is negative", m.Round)
	}
	for i, f := range m.Files {
		if err := checkName(f.Name); err != nil {
			return m, err
		}
		if f.Size < 0 {
			return m, fmt.Errorf("file %s has size %d", f.Name, f.Size)
		}
		if i > 0 && f.Name <= m.Files[i-1].Name {
			return m, fmt.Errorf("file %s is listed after %s: the names are not in order", f.Name, m.Files[i-1].Name)
		}
		if isDelta(f.Name) && (f.Base < 0 || f.Base >= m.Round || !slices.Contains(m.Needs, f.Base)) || !isDelta(f.Name) && (f.Base != 0 || f.BaseCRC32C != 0) {
			return m, fmt.Errorf("file %s builds on round %d, the checkpoint of round %d needs %v", f.Name, f.Base, m.Round, m.Needs)
		}
	}
	for i, r := range m.Needs {
		if r < 0 || r >= m.Round || i > 0 && r >= m.Needs[i-1] {
			return m, fmt.Errorf("needs rounds %v: want earlier rounds than %d, newest first", m.Needs, m.Round)
		}
	}
	return m, nil
}

// Open reads the MANIFEST of the checkpoint of round in dir, without
// checking the files (Verify and Read do).
func Open(dir string, round int) (*Manifest, error) {
	d := RoundDir(dir, round)
	path := filepath.Join(d, ManifestName)
	data, size, err := readRegular(path, MaxManifest)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("checkpoint %s is incomplete: %s is missing", d, path)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if size > MaxManifest {
		return nil, fmt.Errorf("checkpoint: %s has %d bytes, at most %d", path, size, MaxManifest)
	}
	m, err := ParseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w", path, err)
	}
	if m.Round != round {
		return nil, fmt.Errorf("checkpoint: %s is of round %d, its directory of round %d", path, m.Round, round)
	}
	m.Dir = d
	return &m, nil
}

// file returns the manifest's entry of name.
func (m *Manifest) file(name string) (File, bool) {
	i, ok := slices.BinarySearchFunc(m.Files, name, func(f File, n string) int { return strings.Compare(f.Name, n) })
	if !ok {
		return File{}, false
	}
	return m.Files[i], true
}

// Read returns the content of file name of the checkpoint, checked
// against the manifest's size and checksum; errors name the file.
func (m *Manifest) Read(name string) ([]byte, error) {
	f, ok := m.file(name)
	if !ok {
		return nil, fmt.Errorf("checkpoint %s has no file %s", m.Dir, name)
	}
	path := filepath.Join(m.Dir, name)
	data, size, err := readRegular(path, f.Size)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if size != f.Size {
		return nil, fmt.Errorf("checkpoint: %s has %d bytes, the manifest says %d: the file is truncated or altered", path, size, f.Size)
	}
	if int64(len(data)) != f.Size {
		return nil, fmt.Errorf("checkpoint: %s has %d bytes, the manifest says %d: the file is truncated or altered", path, len(data), f.Size)
	}
	if got := Checksum(data); got != f.CRC32C {
		return nil, fmt.Errorf("checkpoint: %s has checksum %08x, the manifest says %08x: the file is altered", path, got, f.CRC32C)
	}
	return data, nil
}

// readRegular returns the content of the regular file at path and its
// size, reading nothing when the size is over limit. Anything else at
// path (a FIFO, a device, a symbolic link, a directory) is refused
// without being opened for reading beyond a non-blocking open, so that a
// FIFO does not block the reader and a link to /dev/zero is not read
// until memory runs out; the bytes read stay within the size the file
// had when opened.
func readRegular(path string, limit int64) ([]byte, int64, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file (%v)", path, st.Mode().Type())
	}
	f, err := openNonBlocking(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file (%v)", path, st.Mode().Type())
	}
	if st.Size() > limit || st.Size() < 0 {
		return nil, st.Size(), nil
	}
	data := make([]byte, st.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	return data, st.Size(), nil
}

// Verify reads every file of the checkpoint and checks it against the
// manifest.
func (m *Manifest) Verify() error {
	for _, f := range m.Files {
		if _, err := m.Read(f.Name); err != nil {
			return err
		}
	}
	return nil
}

// serverOf returns the snapshot and delta names of the server whose
// file is name, and whether name is a server's file.
func serverOf(name string) (snap, delta string, ok bool) {
	base, ok := strings.CutSuffix(name, ".delta")
	if !ok {
		base, ok = strings.CutSuffix(name, ".snap")
	}
	return base + ".snap", base + ".delta", ok && strings.HasPrefix(base, "server-")
}

// chainOf returns the chain of m (Manifest.Needs), a checkpoint of dir
// being committed: the base of each of its deltas, which must be
// complete and hold the file of the delta's server it was taken on, and
// that server's earlier links down to its whole snapshot.
func chainOf(dir string, m Manifest) ([]int, error) {
	var needs []int
	for i, f := range m.Files {
		if !isDelta(f.Name) {
			continue
		}
		if f.Base < 0 || f.Base >= m.Round {
			return nil, fmt.Errorf("checkpoint: %s of round %d builds on round %d: want an earlier round", f.Name, m.Round, f.Base)
		}
		b, err := Open(dir, f.Base)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %s of round %d builds on round %d: %w", f.Name, m.Round, f.Base, err)
		}
		bf, ok := b.serverFile(f.Name)
		switch {
		case !ok:
			return nil, fmt.Errorf("checkpoint: %s of round %d builds on round %d, whose checkpoint has no file of its server", f.Name, m.Round, f.Base)
		case f.BaseCRC32C != 0 && f.BaseCRC32C != bf.CRC32C:
			return nil, fmt.Errorf("checkpoint: %s of round %d builds on a file of round %d with checksum %08x, %s has %08x: the base was written again", f.Name, m.Round, f.Base, f.BaseCRC32C, filepath.Join(b.Dir, bf.Name), bf.CRC32C)
		}
		m.Files[i].BaseCRC32C = bf.CRC32C
		needs = append(needs, f.Base)
		// The server's own links down to its whole snapshot (each checked
		// when its checkpoint was committed), not the base's whole chain:
		// the servers' whole snapshots may fall in different checkpoints,
		// and a chain of every server's links would never end.
		for isDelta(bf.Name) {
			if bf.Base < 0 || bf.Base >= b.Round {
				return nil, fmt.Errorf("checkpoint: %s builds on round %d: want an earlier round", filepath.Join(b.Dir, bf.Name), bf.Base)
			}
			r := bf.Base
			if b, err = Open(dir, r); err != nil {
				return nil, fmt.Errorf("checkpoint: %s of round %d builds on round %d, which builds on round %d: %w", f.Name, m.Round, f.Base, r, err)
			}
			if bf, ok = b.serverFile(f.Name); !ok {
				return nil, fmt.Errorf("checkpoint: %s of round %d builds on round %d, whose checkpoint has no file of its server", f.Name, m.Round, r)
			}
			needs = append(needs, r)
		}
	}
	slices.Sort(needs)
	needs = slices.Compact(needs)
	slices.Reverse(needs)
	return needs, nil
}

// serverFile returns m's file of the server whose file (a snapshot or a
// delta) is named name: the base a delta of that server builds on.
func (m *Manifest) serverFile(name string) (File, bool) {
	snap, delta, _ := serverOf(name)
	if f, ok := m.file(snap); ok {
		return f, true
	}
	return m.file(delta)
}

// checkBase checks that b, the checkpoint of the base of delta f (a file
// of c), holds the file of f's server that f was taken on (File.Base,
// BaseCRC32C).
func checkBase(c, b *Manifest, f File) error {
	bf, ok := b.serverFile(f.Name)
	switch {
	case !ok:
		return fmt.Errorf("checkpoint: %s builds on %s, which has no file of its server", filepath.Join(c.Dir, f.Name), b.Dir)
	case f.BaseCRC32C != 0 && f.BaseCRC32C != bf.CRC32C:
		return fmt.Errorf("checkpoint: %s builds on a file with checksum %08x, %s has %08x: the checkpoint of round %d was written again after it", filepath.Join(c.Dir, f.Name), f.BaseCRC32C, filepath.Join(b.Dir, bf.Name), bf.CRC32C, b.Round)
	}
	return nil
}

// parent returns the directory of the checkpoints beside m.
func (m *Manifest) parent() string { return filepath.Dir(m.Dir) }

// VerifyChain opens and verifies (Verify) every checkpoint m needs
// (Manifest.Needs), and checks that the base of each delta of m, and of
// each delta of the same server it builds on, is one of them and holds
// the file of the delta's server it was taken on: a
// checkpoint whose chain verifies can be restored. verified, when not
// nil, holds the rounds verified already (and receives those verified
// here), so that checkpoints sharing a base read it once. Errors name
// the file at fault.
func (m *Manifest) VerifyChain(verified map[int]bool) error {
	chain := map[int]*Manifest{m.Round: m}
	for _, r := range m.Needs {
		b, err := Open(m.parent(), r)
		if err != nil {
			return fmt.Errorf("checkpoint %s needs the checkpoint of round %d: %w", m.Dir, r, err)
		}
		if !verified[r] {
			if err := b.Verify(); err != nil {
				return fmt.Errorf("checkpoint %s needs the checkpoint of round %d: %w", m.Dir, r, err)
			}
			if verified != nil {
				verified[r] = true
			}
		}
		chain[r] = b
	}
	// Each delta's links, down to its server's whole snapshot: only
	// those; a checkpoint of the chain may hold deltas of other servers
	// whose own bases were pruned (m needs none of them).
	for _, f := range m.Files {
		for c := m; isDelta(f.Name); {
			b, ok := chain[f.Base]
			if !ok || f.Base >= c.Round {
				return fmt.Errorf("checkpoint: %s builds on round %d, which %s does not list", filepath.Join(c.Dir, f.Name), f.Base, filepath.Join(m.Dir, ManifestName))
			}
			if err := checkBase(c, b, f); err != nil {
				return err
			}
			c = b
			f, _ = c.serverFile(f.Name) // there: checked by checkBase
		}
	}
	return nil
}

// ServerFile returns the name of server's file in the checkpoint: its
// delta's (DeltaName) when it lists one, its snapshot's otherwise.
func (m *Manifest) ServerFile(server int) string {
	if _, ok := m.file(DeltaName(server)); ok {
		return DeltaName(server)
	}
	return SnapshotName(server)
}

// ReadSnapshot returns server's snapshot in the checkpoint: its file,
// checked against the manifest, or for a delta the snapshot of its base
// (read so, from the checkpoint of its round beside this one) with the
// delta applied (ApplyDelta). Errors name the file at fault.
func (m *Manifest) ReadSnapshot(server int) (Snapshot, error) {
	name := m.ServerFile(server)
	f, ok := m.file(name)
	if !ok {
		return Snapshot{}, fmt.Errorf("checkpoint %s has no file of server %d (%s or %s)", m.Dir, server, SnapshotName(server), DeltaName(server))
	}
	path := filepath.Join(m.Dir, name)
	data, err := m.Read(name)
	if err != nil {
		return Snapshot{}, err
	}
	s, err := DecodeSnapshot(data)
	switch {
	case err != nil:
	case s.Server != server:
		err = fmt.Errorf("a file of server %d, want server %d", s.Server, server)
	case s.Delta != isDelta(name):
		err = fmt.Errorf("its content is a delta: %v, its name says %v", s.Delta, isDelta(name))
	case s.Delta && s.Base != f.Base:
		err = fmt.Errorf("a delta on round %d, the manifest says %d", s.Base, f.Base)
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("checkpoint: %s: %w", path, err)
	}
	if !s.Delta {
		return s, nil
	}
	b, err := Open(m.parent(), f.Base)
	if err == nil {
		err = checkBase(m, b, f)
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("checkpoint: %s builds on round %d: %w", path, f.Base, err)
	}
	base, err := b.ReadSnapshot(server)
	if err != nil {
		return Snapshot{}, fmt.Errorf("checkpoint: %s builds on round %d: %w", path, f.Base, err)
	}
	out, err := ApplyDelta(base, s)
	if err != nil {
		return Snapshot{}, fmt.Errorf("checkpoint: %s on %s: %w", path, b.Dir, err)
	}
	return out, nil
}

// Rounds returns the rounds of the checkpoint directories in dir, newest
// first, complete or not; none when dir does not exist.
func Rounds(dir string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var rounds []int
	for _, e := range ents {
		if r, ok := parseRoundDir(e.Name()); ok && e.IsDir() {
			rounds = append(rounds, r)
		}
	}
	slices.Sort(rounds)
	slices.Reverse(rounds)
	return rounds, nil
}

// Latest returns the newest complete checkpoint of dir (every file
// verified, and every checkpoint of its chain, see VerifyChain), the
// errors that refused the newer ones (each naming the
// file at fault), and an error when there is none.
func Latest(dir string) (*Manifest, []error, error) {
	rounds, err := Rounds(dir)
	if err != nil {
		return nil, nil, err
	}
	var refused []error
	verified := map[int]bool{}
	for _, r := range rounds {
		m, err := Open(dir, r)
		if err == nil {
			err = m.Verify()
		}
		if err == nil {
			verified[r] = true
			err = m.VerifyChain(verified)
		}
		if err == nil {
			return m, refused, nil
		}
		refused = append(refused, err)
	}
	if len(refused) > 0 {
		return nil, refused, fmt.Errorf("checkpoint: no complete checkpoint in %s: %w", dir, errors.Join(refused...))
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		// A mistyped directory, not checkpoints lost.
		return nil, nil, fmt.Errorf("checkpoint: no checkpoint in %s: there is no such directory", dir)
	}
	return nil, nil, fmt.Errorf("checkpoint: no checkpoint in %s", dir)
}

// Prune removes the checkpoints of dir but the newest keep complete ones
// (by their manifest; files are not read), the newest durable one (not
// Volatile) when it is older than those, the checkpoints those need
// (their chains, Manifest.Needs), and any newer than those: older
// complete checkpoints and incomplete ones older than the newest kept.
// The newest of those it removes becomes the spare directory (SpareDir,
// replacing the one before), whose files the next checkpoint's
// overwrite.
func Prune(dir string, keep int) error {
	rounds, err := Rounds(dir)
	if err != nil {
		return err
	}
	kept, durable := 0, false
	spared := false
	needed := map[int]bool{}
	var errs []error
	for _, r := range rounds {
		m, err := Open(dir, r)
		complete := err == nil
		// own: kept for itself, with its chain; a checkpoint kept only as
		// a link of another's chain needs nothing more (that chain lists
		// every link of the servers that build on it).
		own := complete && (kept < keep || !durable && !m.Volatile)
		if own || complete && needed[r] || !complete && kept == 0 {
			if complete {
				kept++
				durable = durable || !m.Volatile
			}
			if own {
				for _, n := range m.Needs {
					needed[n] = true
				}
			}
			continue
		}
		if err := remove(dir, r, !spared); err != nil {
			errs = append(errs, err)
		}
		spared = true
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("checkpoint: pruning %s: %w", dir, err)
	}
	return nil
}

// remove removes the checkpoint of round in dir; with spare, it replaces
// the spare directory instead.
func remove(dir string, round int, spare bool) error {
	d := RoundDir(dir, round)
	if spare {
		s := filepath.Join(dir, SpareDir)
		if err := os.RemoveAll(s); err != nil {
			return err
		}
		if err := os.Rename(d, s); err == nil {
			return nil
		}
	}
	return os.RemoveAll(d)
}
