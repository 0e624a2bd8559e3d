# Embeds text files (JSON schemas, architecture presets) into the binaries so a
# tool never depends on where it is installed.
#
#   cct_embed_files(TARGET <lib> NAMESPACE <ns> FILES <f>...)
# generates <lib>_embedded.cpp defining
#   const cct::EmbeddedFile <ns>_files[]; size_t <ns>_count;
# with {name (basename), contents}.
set(CCT_EMBED_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/EmbedScript.cmake")

function(cct_embed_files)
  cmake_parse_arguments(E "" "TARGET;NAMESPACE" "FILES" ${ARGN})
  set(out "${CMAKE_CURRENT_BINARY_DIR}/${E_TARGET}_embedded.cpp")
  add_custom_command(
    OUTPUT "${out}"
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DNS=${E_NAMESPACE} "-DFILES=${E_FILES}" -P "${CCT_EMBED_SCRIPT}"
    DEPENDS ${E_FILES} "${CCT_EMBED_SCRIPT}"
    COMMENT "Embedding ${E_NAMESPACE} files"
    VERBATIM)
  target_sources(${E_TARGET} PRIVATE "${out}")
endfunction()
