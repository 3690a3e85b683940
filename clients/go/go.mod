module example.com/licensing/clients/go

go 1.25

require github.com/gowebpki/jcs v1.0.2
