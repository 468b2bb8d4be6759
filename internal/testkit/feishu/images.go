package feishu

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
)

// maxImageBytes is what Feishu's image upload takes at most (10 MB).
const maxImageBytes = 10 << 20

// Image is an image uploaded through POST /open-apis/im/v1/images.
type Image struct {
	Key  string
	Type string // image_type: message or avatar
	Data []byte
}

// Images returns the images uploaded so far, oldest first.
func (s *Server) Images() []Image {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Image(nil), s.images...)
}

// multipartForm reads a multipart/form-data body: its fields, and its
// files by field name.
func multipartForm(header http.Header, raw []byte) (map[string]string, map[string][]byte, error) {
	mt, params, err := mime.ParseMediaType(header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, nil, errors.New("not multipart/form-data")
	}
	fields, files := map[string]string{}, map[string][]byte{}
	mr := multipart.NewReader(bytes.NewReader(raw), params["boundary"])
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return fields, files, nil
		}
		if err != nil {
			return nil, nil, err
		}
		data, err := io.ReadAll(p)
		if err != nil {
			return nil, nil, err
		}
		if p.FileName() != "" {
			files[p.FormName()] = data
		} else {
			fields[p.FormName()] = string(data)
		}
	}
}

// formObject is a multipart body as the contract's schema reads it: each
// field's value, and each file as a string that says so.
func formObject(header http.Header, raw []byte) (map[string]any, error) {
	fields, files, err := multipartForm(header, raw)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for k, v := range fields {
		out[k] = v
	}
	for k, v := range files {
		out[k] = fmt.Sprintf("(a file of %d bytes)", len(v))
	}
	return out, nil
}

// uploadImage answers the image upload as Feishu does: an image_key.
func (s *Server) uploadImage(w http.ResponseWriter, req Request) {
	fields, files, err := multipartForm(req.Header, req.Raw)
	switch {
	case err != nil:
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 234001, "msg": "Invalid request param."})
		return
	case fields["image_type"] != "message" && fields["image_type"] != "avatar":
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 234001, "msg": "Invalid request param: image_type."})
		return
	case len(files["image"]) == 0:
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 234010, "msg": "File's size can't be 0."})
		return
	case len(files["image"]) > maxImageBytes:
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 234006, "msg": "The file size exceed the max value."})
		return
	case !isImage(files["image"]):
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 234011, "msg": "Can't recognise image format."})
		return
	}
	s.mu.Lock()
	s.seq++
	key := fmt.Sprintf("img_v3_fake%020d", s.seq)
	s.images = append(s.images, Image{Key: key, Type: fields["image_type"], Data: files["image"]})
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"code": 0, "msg": "success", "data": map[string]any{"image_key": key}})
}

// isImage recognises the formats Feishu takes by their signatures.
func isImage(b []byte) bool {
	for _, sig := range []string{"\x89PNG\r\n\x1a\n", "\xff\xd8\xff", "GIF8", "BM"} {
		if strings.HasPrefix(string(b), sig) {
			return true
		}
	}
	return len(b) > 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP"
}
