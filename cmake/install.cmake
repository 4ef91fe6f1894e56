# install.cmake - what `cmake --install` / `make install` puts where, included
# at the end of the top-level CMakeLists.txt (after the library, CLI and
# benchmark targets exist):
#   bin/imgconv, bin/imgconv-bench
#   lib/libimgconv.so.MAJOR... (only the ic_ functions of the public headers
#     exported: an ld version script generated from them), lib/libimgconv.a
#     (position-independent, so it can go into a shared library)
#   include/imgconv.h and its companions imgconv_course.h and
#     imgconv_gpu_codec.h, lib/pkgconfig/imgconv.pc, lib/cmake/imgconv/ (find_package
#     gives imgconv::imgconv, the shared library, and imgconv::imgconv_static)
#   share/man/man1/imgconv.1 (generated from `imgconv --help` at build time, so
#     the two cannot drift), share/bash-completion/completions/imgconv
# and the `uninstall` target (removes what install_manifest.txt lists).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The static library goes into shared ones (ours and the user's): PIC objects.
set_target_properties(imgconv PROPERTIES POSITION_INDEPENDENT_CODE ON)

# ---- the exported API: every function declared in the public headers --------
# A function added to a header re-runs this (the map is made from them).
set(IC_PUBLIC_HEADERS ${PROJECT_SOURCE_DIR}/include/imgconv.h
  ${PROJECT_SOURCE_DIR}/include/imgconv_course.h ${PROJECT_SOURCE_DIR}/include/imgconv_gpu_codec.h)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${IC_PUBLIC_HEADERS})
set(IC_HEADER_LINES "")
foreach(header IN LISTS IC_PUBLIC_HEADERS)
  file(STRINGS ${header} lines REGEX "^[a-z].*[ *]ic_[a-z0-9_]+\\(")
  list(APPEND IC_HEADER_LINES ${lines})
endforeach()
set(IC_PUBLIC_FUNCTIONS "")
foreach(line IN LISTS IC_HEADER_LINES)
  if(line MATCHES "^static ")   # static inline helpers are not symbols
    continue()
  endif()
  string(REGEX MATCH "ic_[a-z0-9_]+\\(" fn "${line}")
  string(REPLACE "(" "" fn "${fn}")
  list(APPEND IC_PUBLIC_FUNCTIONS ${fn})
endforeach()
list(REMOVE_DUPLICATES IC_PUBLIC_FUNCTIONS)
list(JOIN IC_PUBLIC_FUNCTIONS ";\n    " IC_EXPORT_LIST)
set(IC_VERSION_SCRIPT ${PROJECT_BINARY_DIR}/imgconv.map)
file(CONFIGURE OUTPUT ${IC_VERSION_SCRIPT} CONTENT
  "/* generated from include/imgconv*.h by cmake/install.cmake */\nIMGCONV_${PROJECT_VERSION_MAJOR} {\n  global:\n    ${IC_EXPORT_LIST};\n  local: *;\n};\n")

# ---- the shared library, from the static library's objects ---------------------
add_library(imgconv_shared SHARED $<TARGET_OBJECTS:imgconv>)
target_link_libraries(imgconv_shared PRIVATE $<TARGET_PROPERTY:imgconv,LINK_LIBRARIES>)
target_include_directories(imgconv_shared PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_options(imgconv_shared PRIVATE "LINKER:--version-script=${IC_VERSION_SCRIPT}" "LINKER:--no-undefined")
set_target_properties(imgconv_shared PROPERTIES
  OUTPUT_NAME imgconv VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
  LINK_DEPENDS ${IC_VERSION_SCRIPT} INSTALL_RPATH_USE_LINK_PATH ON)
if(IC_HAVE_CUDA)
  set_target_properties(imgconv_shared PROPERTIES LINKER_LANGUAGE CUDA)
endif()

# ---- what a static link needs besides libimgconv.a ---------------------------
# As -l flags for pkg-config's Libs.private and as link items for the CMake
# package. The CUDA part follows how src/cuda links the runtime (static
# cudart, cuFFT); keep it in step with the target_link_libraries of imgconv.
set(IC_PRIVATE_LIBS "")
set(ic_format_libs ${PNG_LIBRARIES} ${JPEG_LIBRARIES})
if(IC_HAVE_LIBDEFLATE)
  list(APPEND ic_format_libs ${IC_LIBDEFLATE_LIBRARY})
endif()
if(IC_HAVE_TIFF)
  list(APPEND ic_format_libs ${TIFF_LIBRARIES})
endif()
if(IC_HAVE_WEBP)
  list(APPEND ic_format_libs ${WEBP_LIBRARIES})
endif()
if(IC_HAVE_KISSFFT)
  list(APPEND ic_format_libs ${KISSFFT_LIBRARIES})
endif()
# Libraries outside the compiler's own search path (a carried bundle, a
# custom prefix) need their folder as -L, or a static link cannot find them.
set(ic_lib_dirs "")
if(IC_HAVE_WEBP)
  list(APPEND ic_lib_dirs ${WEBP_LIBRARY_DIRS})
endif()
if(IC_HAVE_KISSFFT)
  list(APPEND ic_lib_dirs ${KISSFFT_LIBRARY_DIRS})
endif()
foreach(lib IN LISTS ic_format_libs)
  if(lib MATCHES "^(optimized|debug|general)$")
    continue()
  endif()
  if(IS_ABSOLUTE "${lib}")
    get_filename_component(dir "${lib}" DIRECTORY)
    list(APPEND ic_lib_dirs "${dir}")
  endif()
  get_filename_component(name "${lib}" NAME_WE)
  string(REGEX REPLACE "^lib" "" name "${name}")
  list(APPEND IC_PRIVATE_LIBS ${name})
endforeach()
set(IC_PC_CUDA "")
if(IC_HAVE_CUDA)
  # nvJPEG links shared, from the toolkit or IC_NVJPEG_ROOT's folder.
  if(IC_HAVE_NVJPEG)
    list(APPEND IC_PRIVATE_LIBS nvjpeg)
    if(IC_NVJPEG_LIBRARY)
      get_filename_component(dir "${IC_NVJPEG_LIBRARY}" DIRECTORY)
      list(APPEND ic_lib_dirs "${dir}")
    endif()
  endif()
  list(APPEND IC_PRIVATE_LIBS cufft cudart_static stdc++ dl rt)
  set(ic_cuda_libdir "${CUDAToolkit_LIBRARY_DIR}")
  if(CUDA_cufft_LIBRARY)
    get_filename_component(ic_cuda_libdir "${CUDA_cufft_LIBRARY}" DIRECTORY)
  endif()
  set(IC_PC_CUDA "-L${ic_cuda_libdir} ")
endif()
list(APPEND IC_PRIVATE_LIBS m pthread)
list(REMOVE_DUPLICATES IC_PRIVATE_LIBS)
list(TRANSFORM IC_PRIVATE_LIBS PREPEND "-l" OUTPUT_VARIABLE IC_PC_FLAGS)
list(JOIN IC_PC_FLAGS " " IC_PC_FLAGS)
set(IC_PC_DIRS "")
list(REMOVE_DUPLICATES ic_lib_dirs)
list(TRANSFORM ic_lib_dirs REPLACE "/pkgconfig/\\.\\./\\.\\./lib$" "")
list(REMOVE_DUPLICATES ic_lib_dirs)
set(IC_PRIVATE_DIRS "")
foreach(dir IN LISTS ic_lib_dirs)
  if(NOT dir IN_LIST CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
    string(APPEND IC_PC_DIRS "-L${dir} ")
    list(APPEND IC_PRIVATE_DIRS "${dir}")
  endif()
endforeach()
set(IC_PC_LIBS_PRIVATE "${IC_PC_DIRS}${IC_PC_CUDA}${IC_PC_FLAGS}")

# Relocatable: the prefix is found from the .pc file's own folder, so
# `cmake --install --prefix P` and DESTDIR give a working file.
file(RELATIVE_PATH IC_PC_UP "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
string(REGEX REPLACE "/$" "" IC_PC_UP "${IC_PC_UP}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/imgconv.pc.in ${PROJECT_BINARY_DIR}/imgconv.pc @ONLY)
set(IC_CONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/imgconv)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/imgconv-config.cmake.in
  ${PROJECT_BINARY_DIR}/imgconv-config.cmake INSTALL_DESTINATION ${IC_CONFIG_DIR}
  PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/imgconv-config-version.cmake
  COMPATIBILITY SameMinorVersion)

# ---- the man page, generated from --help by tools/help2man.sh -----------------
if(TARGET imgconv-cli)
  add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/imgconv.1
    COMMAND sh ${PROJECT_SOURCE_DIR}/tools/help2man.sh $<TARGET_FILE:imgconv-cli> > ${PROJECT_BINARY_DIR}/imgconv.1.tmp
    COMMAND ${CMAKE_COMMAND} -E rename ${PROJECT_BINARY_DIR}/imgconv.1.tmp ${PROJECT_BINARY_DIR}/imgconv.1
    DEPENDS imgconv-cli ${PROJECT_SOURCE_DIR}/tools/help2man.sh
    COMMENT "Generating imgconv.1 from imgconv --help" VERBATIM)
  add_custom_target(imgconv-man ALL DEPENDS ${PROJECT_BINARY_DIR}/imgconv.1)
  set_target_properties(imgconv-cli PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS imgconv-cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(FILES ${PROJECT_BINARY_DIR}/imgconv.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
  install(FILES ${PROJECT_SOURCE_DIR}/tools/imgconv.bash-completion
    DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME imgconv)
endif()
if(TARGET imgconv-bench)
  set_target_properties(imgconv-bench PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS imgconv-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(TARGETS imgconv imgconv_shared
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Unspecified)
install(FILES ${IC_PUBLIC_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/imgconv.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
install(FILES ${PROJECT_BINARY_DIR}/imgconv-config.cmake ${PROJECT_BINARY_DIR}/imgconv-config-version.cmake
  DESTINATION ${IC_CONFIG_DIR})

add_custom_target(uninstall
  COMMAND ${CMAKE_COMMAND} -DMANIFEST=${PROJECT_BINARY_DIR}/install_manifest.txt
          -P ${PROJECT_SOURCE_DIR}/cmake/uninstall.cmake
  COMMENT "Removing the files listed in install_manifest.txt")
