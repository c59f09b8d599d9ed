// Package protoschema finds gRPC method descriptors at run time: from .proto
// files compiled in-process (protocompile), or from a server's reflection
// service. It is shared by the grpc driver and the healthevents system under
// test.
package protoschema

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/reporter"
	"github.com/pipebench/pipebench"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	rpbalpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	// The well-known types, so a reflection answer that leaves them out
	// still resolves.
	_ "google.golang.org/protobuf/types/known/durationpb"
	_ "google.golang.org/protobuf/types/known/emptypb"
	_ "google.golang.org/protobuf/types/known/structpb"
	_ "google.golang.org/protobuf/types/known/timestamppb"
	_ "google.golang.org/protobuf/types/known/wrapperspb"
)

// Resolver finds descriptors by full name.
type Resolver interface {
	FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error)
}

// Compile parses and links the .proto files named in files, looking for
// them and their imports in importPaths (the current directory when empty)
// or, when fsys is not nil, in fsys. The well-known google/protobuf imports
// are built in. The error names the file, line and column of the first
// problems.
func Compile(ctx context.Context, files, importPaths []string, fsys fs.FS) (*protoregistry.Files, error) {
	src := &protocompile.SourceResolver{ImportPaths: importPaths}
	// Every file as pipebench reads every file a user names: a regular
	// file (a FIFO would hold the run; /dev/zero is not a .proto file),
	// through a size limit checked while reading.
	src.Accessor = func(path string) (io.ReadCloser, error) {
		var data []byte
		var err error
		if fsys == nil {
			data, err = pipebench.ReadInput(ctx, pipebench.Input{Path: path, What: "proto file", Limit: pipebench.MaxProtoSize, Regular: true})
		} else {
			var f fs.File
			if f, err = fsys.Open(path); err != nil {
				return nil, err
			}
			defer f.Close()
			data, err = pipebench.ReadAllLimit(f, path, pipebench.MaxProtoSize)
		}
		if err != nil {
			return nil, err
		}
		return io.NopCloser(bytes.NewReader(data)), nil
	}
	var problems []string
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(src),
		SourceInfoMode: protocompile.SourceInfoNone,
		Reporter: reporter.NewReporter(func(err reporter.ErrorWithPos) error {
			if len(problems) < 10 {
				problems = append(problems, err.Error())
			}
			return nil
		}, nil),
	}
	linked, err := c.Compile(ctx, files...)
	if err != nil {
		if len(problems) > 0 {
			return nil, errors.New(strings.Join(problems, "\n"))
		}
		return nil, err
	}
	reg := new(protoregistry.Files)
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor) error
	add = func(fd protoreflect.FileDescriptor) error {
		if seen[fd.Path()] {
			return nil
		}
		seen[fd.Path()] = true
		imps := fd.Imports()
		for i := 0; i < imps.Len(); i++ {
			if err := add(imps.Get(i).FileDescriptor); err != nil {
				return err
			}
		}
		return reg.RegisterFile(fd)
	}
	for _, f := range linked {
		if err := add(f); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// Method finds a method by name in r. name is "pkg.Service/Method",
// "/pkg.Service/Method" or "pkg.Service.Method".
func Method(r Resolver, name string) (protoreflect.MethodDescriptor, error) {
	svc, m, err := SplitMethod(name)
	if err != nil {
		return nil, err
	}
	d, err := r.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil, fmt.Errorf("service %s is not defined: %w", svc, err)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, fmt.Errorf("%s is a %T, not a service", svc, d)
	}
	md := sd.Methods().ByName(protoreflect.Name(m))
	if md == nil {
		var names []string
		for i := 0; i < sd.Methods().Len(); i++ {
			names = append(names, string(sd.Methods().Get(i).Name()))
		}
		return nil, fmt.Errorf("service %s has no method %s (it has %s)", svc, m, strings.Join(names, ", "))
	}
	return md, nil
}

// SplitMethod splits a method name into its service's full name and the
// method's short name.
func SplitMethod(name string) (service, method string, err error) {
	n := strings.TrimPrefix(name, "/")
	i := strings.LastIndex(n, "/")
	if i < 0 {
		i = strings.LastIndex(n, ".")
	}
	if i <= 0 || i == len(n)-1 {
		return "", "", fmt.Errorf("%q is not a method name: write package.Service/Method", name)
	}
	return n[:i], n[i+1:], nil
}

// FullMethod is the gRPC path of md: "/pkg.Service/Method".
func FullMethod(md protoreflect.MethodDescriptor) string {
	return "/" + string(md.Parent().FullName()) + "/" + string(md.Name())
}

// FromReflection asks the server behind cc, through its reflection service
// (grpc.reflection.v1, or v1alpha for servers that only have that), for the
// file defining symbol and every file it imports, and returns them linked.
func FromReflection(ctx context.Context, cc grpc.ClientConnInterface, symbol string) (*protoregistry.Files, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	protos := map[string]*descriptorpb.FileDescriptorProto{}
	var ask func(symbol, file string) ([][]byte, error)
	for _, alpha := range []bool{false, true} {
		var err error
		if ask, err = openReflection(ctx, cc, alpha); err != nil {
			return nil, err
		}
		var files [][]byte
		files, err = ask(symbol, "")
		if status.Code(err) == codes.Unimplemented && !alpha {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := decodeFiles(files, protos); err != nil {
			return nil, err
		}
		break
	}
	// Fetch imports the answer left out, unless this binary knows them.
	for round := 0; round < 100; round++ {
		var missing []string
		for _, fdp := range protos {
			for _, dep := range fdp.GetDependency() {
				if _, ok := protos[dep]; ok {
					continue
				}
				if fd, err := protoregistry.GlobalFiles.FindFileByPath(dep); err == nil {
					protos[dep] = protodesc.ToFileDescriptorProto(fd)
					continue
				}
				missing = append(missing, dep)
			}
		}
		if len(missing) == 0 {
			break
		}
		for _, dep := range missing {
			files, err := ask("", dep)
			if err != nil {
				return nil, err
			}
			if err := decodeFiles(files, protos); err != nil {
				return nil, err
			}
			if _, ok := protos[dep]; !ok {
				return nil, fmt.Errorf("server reflection: the server did not send %s", dep)
			}
		}
	}
	set := &descriptorpb.FileDescriptorSet{}
	for _, fdp := range protos {
		set.File = append(set.File, fdp)
	}
	files, err := protodesc.NewFiles(set)
	if err != nil {
		return nil, fmt.Errorf("server reflection: %w", err)
	}
	return files, nil
}

// openReflection opens a reflection stream (v1, or v1alpha when alpha) and
// returns a function asking it for the file defining symbol, or for file.
// v1alpha's messages are v1's under another package name, field for field,
// so both versions' streams carry v1's messages; only the method differs.
func openReflection(ctx context.Context, cc grpc.ClientConnInterface, alpha bool) (func(symbol, file string) ([][]byte, error), error) {
	method := rpb.ServerReflection_ServerReflectionInfo_FullMethodName
	if alpha {
		method = rpbalpha.ServerReflection_ServerReflectionInfo_FullMethodName
	}
	cs, err := cc.NewStream(ctx, &rpb.ServerReflection_ServiceDesc.Streams[0], method, grpc.StaticMethod())
	if err != nil {
		return nil, fmt.Errorf("server reflection: %w", err)
	}
	stream := &grpc.GenericClientStream[rpb.ServerReflectionRequest, rpb.ServerReflectionResponse]{ClientStream: cs}
	return func(symbol, file string) ([][]byte, error) {
		req := &rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_FileByFilename{FileByFilename: file}}
		if symbol != "" {
			req.MessageRequest = &rpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: symbol}
		}
		if err := stream.Send(req); err != nil {
			if _, rerr := stream.Recv(); rerr != nil && err == io.EOF {
				err = rerr // the stream ended: Recv has the status
			}
			return nil, fmt.Errorf("server reflection: %w", err)
		}
		resp, err := stream.Recv()
		if err != nil {
			return nil, fmt.Errorf("server reflection: %w", err)
		}
		if e := resp.GetErrorResponse(); e != nil {
			return nil, fmt.Errorf("server reflection: %s", e.GetErrorMessage())
		}
		return resp.GetFileDescriptorResponse().GetFileDescriptorProto(), nil
	}, nil
}

// decodeFiles adds the encoded file descriptors to protos, by name.
func decodeFiles(files [][]byte, protos map[string]*descriptorpb.FileDescriptorProto) error {
	for _, b := range files {
		fdp := new(descriptorpb.FileDescriptorProto)
		if err := proto.Unmarshal(b, fdp); err != nil {
			return fmt.Errorf("server reflection: a file descriptor does not decode: %w", err)
		}
		protos[fdp.GetName()] = fdp
	}
	return nil
}
