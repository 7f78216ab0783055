package main

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strings"
)

// array is one named array of an .npz file: dtype is a numpy descriptor
// ("|u1", "<i2", "<f4"), data its little-endian bytes.
type array struct {
	name  string
	dtype string
	shape []int
	data  []byte
}

// npyHeader is the .npy v1.0 header of an array (numpy's own format: magic,
// version, a padded Python dict literal, so that the data starts on a
// 64-byte boundary).
func npyHeader(dtype string, shape []int) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	sh := strings.Join(dims, ", ")
	if len(shape) == 1 {
		sh += ","
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", dtype, sh)
	total := 10 + len(dict) + 1
	pad := (64 - total%64) % 64
	dict += strings.Repeat(" ", pad) + "\n"
	h := []byte("\x93NUMPY\x01\x00")
	h = binary.LittleEndian.AppendUint16(h, uint16(len(dict)))
	return append(h, dict...)
}

// writeNPZ writes the arrays as an uncompressed .npz (a zip of .npy files,
// what numpy.savez writes and numpy.load reads), through a temporary file
// renamed into place, so a reader never sees a partial shard.
func writeNPZ(path string, arrays []array) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	for _, a := range arrays {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: a.name + ".npy", Method: zip.Store})
		if err != nil {
			f.Close()
			return err
		}
		if _, err := w.Write(npyHeader(a.dtype, a.shape)); err != nil {
			f.Close()
			return err
		}
		if _, err := w.Write(a.data); err != nil {
			f.Close()
			return err
		}
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func f32Bytes(x []float32) []byte {
	b := make([]byte, 0, 4*len(x))
	for _, v := range x {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func i16Bytes(x []int16) []byte {
	b := make([]byte, 0, 2*len(x))
	for _, v := range x {
		b = binary.LittleEndian.AppendUint16(b, uint16(v))
	}
	return b
}
